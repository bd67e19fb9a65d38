"""Model APIs: one module per API pi 0.80.2 speaks, behind the interface of ``base``.

``stream_for(api)`` gives the ``stream(resolved, request, *, abort, on_delta, on_idle)``
function of that API. It returns one assistant message in pi's shape (stopReason
``stop``, ``length``, ``toolUse`` or ``aborted``) or raises :class:`ProviderError`, whose
``partial`` is the message as far as it streamed (stopReason ``error``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .base import ProviderError

MODULES = {
    "openai-completions": "openai_completions",
    "openai-responses": "openai_responses",
    "anthropic-messages": "anthropic_messages",
    "google-generative-ai": "google_generative_ai",
}
APIS = tuple(MODULES)


def stream_for(api: str) -> Callable[..., dict[str, Any]]:
    """The stream function of ``api``; ProviderError (kind other) for an unknown API."""
    name = MODULES.get(api)
    if name is None:
        raise ProviderError(
            f"piweb cannot call the {api!r} API (it speaks {', '.join(APIS)}).", kind="other"
        )
    return importlib.import_module(f"{__name__}.{name}").stream
