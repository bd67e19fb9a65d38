"""What an openai-completions endpoint takes, detected from its provider name and base
URL, equals pi 0.80.2's ``detectCompat`` (run from the pinned pi-ai) for every provider
and URL pi names, each with model ids that change the answer, and for the mixtures
(a provider's name at another provider's URL), where the order of pi's checks counts."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

from sessions_app.agent.providers.openai_completions import detect_compat
from tests.support.pi_reference import ROOT, pi_or_skip

PI_AI = (
    ROOT
    / "bench/pi_reference/node_modules/pi-0.80.2/node_modules/@earendil-works/pi-ai"
    / "dist/api/openai-completions.js"
)
SCRIPT = Path(__file__).resolve().parents[1] / "support" / "pi_compat.mjs"

PROVIDERS = [
    "openai", "zai", "zai-coding-cn", "together", "moonshotai", "moonshotai-cn", "openrouter",
    "cloudflare-workers-ai", "cloudflare-ai-gateway", "nvidia", "ant-ling", "xai", "deepseek",
    "cerebras", "opencode", "ollama", "",
]  # fmt: skip
URLS = [
    "https://api.openai.com/v1", "https://api.z.ai/api/paas/v4", "https://open.bigmodel.cn/v4",
    "https://api.together.ai/v1", "https://api.together.xyz/v1", "https://api.moonshot.ai/v1",
    "https://openrouter.ai/api/v1", "https://api.cloudflare.com/client/v4/ai",
    "https://gateway.ai.cloudflare.com/v1/x", "https://integrate.api.nvidia.com/v1",
    "https://api.ant-ling.com/v1", "https://api.x.ai/v1", "https://api.deepseek.com/v1",
    "https://api.cerebras.ai/v1", "https://llm.chutes.ai/v1", "https://opencode.ai/zen/v1",
    "http://127.0.0.1:11434/v1", "",
]  # fmt: skip
MODEL_IDS = ["gpt-test", "anthropic/claude-x", "openai/gpt-x"]


def pi_detect(models: list[dict]) -> list[dict]:
    node = pi_or_skip()
    done = subprocess.run(
        [node, str(SCRIPT), str(PI_AI)],
        input=json.dumps(models),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_detected_compat_equals_pis_for_every_provider_and_url():
    models = [
        {"provider": provider, "baseUrl": url, "id": model_id}
        for provider, url, model_id in itertools.product(PROVIDERS, URLS, MODEL_IDS)
    ]
    theirs = pi_detect(models)
    differ = []
    for model, pi in zip(models, theirs, strict=True):
        ours = {k: v for k, v in detect_compat(model).items() if v is not None}
        if ours != pi:
            differ.append(
                (
                    model,
                    {k: (ours.get(k), pi.get(k)) for k in ours | pi if ours.get(k) != pi.get(k)},
                )
            )
    assert not differ, f"{len(differ)} of {len(models)} differ, e.g. {differ[:3]}"
