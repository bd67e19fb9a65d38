"""Model APIs: one module per API pi 0.80.2 speaks, each a ``base.Provider``.

``provider_for(api)`` gives that API's module, ``stream_for(api)`` its
``stream(resolved, request, *, abort, on_delta, on_idle)`` function. It returns one assistant message in pi's shape (stopReason
``stop``, ``length``, ``toolUse`` or ``aborted``) or raises :class:`ProviderError`, whose
``partial`` is the message as far as it streamed (stopReason ``error``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, cast

from .base import Provider, ProviderError

MODULES = {
    "openai-completions": "openai_completions",
    "openai-responses": "openai_responses",
    "anthropic-messages": "anthropic_messages",
    "google-generative-ai": "google_generative_ai",
}
APIS = tuple(MODULES)


def provider_for(api: str) -> Provider:
    """The module that speaks ``api``; ProviderError (kind other) for an unknown API."""
    name = MODULES.get(api)
    if name is None:
        raise ProviderError(
            f"piweb cannot call the {api!r} API (it speaks {', '.join(APIS)}).", kind="other"
        )
    # Each provider module is itself a Provider (module-level functions), which mypy can
    # only be told: it does not check a module imported by name against a protocol.
    return cast("Provider", importlib.import_module(f"{__name__}.{name}"))


def stream_for(api: str) -> Callable[..., dict[str, Any]]:
    """The stream function of ``api``; ProviderError (kind other) for an unknown API."""
    return provider_for(api).stream
