"""How a request reaches its endpoint: headers (the model's, the resolved ones, models.json's
``authHeader``), the key check, the shared TLS context, cached SDK clients and the
prompt-cache retention pi reads from its environment.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

from .base import ProviderError, ResolvedModel


def cache_retention() -> str:
    """pi reads PI_CACHE_RETENTION=long; anything else is the default short retention."""
    return "long" if settings.PI_CACHE_RETENTION == "long" else "short"


def request_headers(resolved: ResolvedModel) -> dict[str, str]:
    """The model's ``headers`` then the resolved ones (options win, as in pi); models.json
    ``authHeader`` sends the key as a Bearer token."""
    headers = {**(resolved.model.get("headers") or {}), **(resolved.headers or {})}
    if resolved.model.get("authHeader") and resolved.api_key:
        if not any(k.lower() == "authorization" for k in headers):
            headers["Authorization"] = f"Bearer {resolved.api_key}"
    return {k: v for k, v in headers.items() if v is not None}


def has_header(headers: dict[str, str], *names: str) -> bool:
    wanted = {n.lower() for n in names}
    return any(k.lower() in wanted and str(v).strip() for k, v in headers.items())


def require_key(resolved: ResolvedModel, headers: dict[str, str], *auth_headers: str) -> str:
    """The key to hand the SDK; an auth error naming the provider when there is none
    (pi accepts a header that carries the auth instead)."""
    if resolved.api_key:
        return resolved.api_key
    if has_header(headers, "authorization", "cf-aig-authorization", *auth_headers):
        return "unused"
    raise ProviderError(
        f"No API key for provider {resolved.provider}: add one on the Models page or in "
        "the server's configuration.",
        kind="auth",
    )


_SSL_CONTEXT: ssl.SSLContext | None = None


_SSL_LOCK = threading.Lock()


def ssl_context() -> ssl.SSLContext:
    """One verified TLS context per process: loading the CA bundle takes ~0.2 s."""
    global _SSL_CONTEXT
    with _SSL_LOCK:
        if _SSL_CONTEXT is None:
            try:
                import certifi

                _SSL_CONTEXT = ssl.create_default_context(cafile=certifi.where())
            except ImportError:  # pragma: no cover
                _SSL_CONTEXT = ssl.create_default_context()
        return _SSL_CONTEXT


_clients: dict[tuple[Any, ...], Any] = {}


_clients_lock = threading.Lock()


MAX_CLIENTS = 64


def cached_client(key: tuple[Any, ...], factory: Callable[[], Any]) -> Any:
    """One SDK client per endpoint, key and headers per process (clients are thread-safe
    and keep their connection pool). At most MAX_CLIENTS are kept (per-user keys make
    many); the least recently used one is dropped, and closes when its last stream does."""
    key = (os.getpid(), *key)
    with _clients_lock:
        client = _clients.pop(key, None)
        if client is None:
            client = factory()
        _clients[key] = client  # most recently used last
        while len(_clients) > MAX_CLIENTS:
            _clients.pop(next(iter(_clients)))
        return client


def endpoint_client(
    api: str,
    resolved: ResolvedModel,
    key: str,
    headers: dict[str, str],
    factory: Callable[[], Any],
) -> Any:
    """The cached SDK client of an API for the model's endpoint, key, headers and
    timeout."""
    endpoint = (resolved.model.get("baseUrl"), key, tuple(sorted(headers.items())))
    return cached_client((api, *endpoint, resolved.timeout), factory)


def post_stream(
    client: Any, path: str, body: dict[str, Any], cast_to: type, stream_cls: type
) -> Callable[[], Iterable[Any]]:
    """What opens a streamed POST of ``body`` as built (the openai and anthropic SDKs
    share this client interface)."""
    return lambda: client.post(path, body=body, cast_to=cast_to, stream=True, stream_cls=stream_cls)
