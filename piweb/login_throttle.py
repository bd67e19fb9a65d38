"""Login throttling (django-axes): the client's address it counts failures by, and the
page a locked-out log-in gets.

The address. Direct connections: the peer address (REMOTE_ADDR). Behind a reverse proxy, set
PIWEB_TRUSTED_PROXIES to the proxies' addresses or networks: when the peer is one of
them, the client is read from PIWEB_CLIENT_IP_HEADER (default X-Forwarded-For): the
right-most address in it that is not itself a trusted proxy, since every proxy appends
the address it received the request from and only those entries can be trusted. A client
that is not a trusted proxy cannot choose its address by sending that header.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.shortcuts import render


def _networks():
    return [ipaddress.ip_network(item, strict=False) for item in settings.PIWEB_TRUSTED_PROXIES]


def _address(text: str):
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def _trusted(address, networks) -> bool:
    return address is not None and any(address in net for net in networks)


def header_meta_key(name: str) -> str:
    return "HTTP_" + name.strip().upper().replace("-", "_")


def client_ip(request) -> str:
    """The address failed logins are counted against (see the module doc)."""
    peer = request.META.get("REMOTE_ADDR", "") or ""
    networks = _networks()
    if not networks or not _trusted(_address(peer), networks):
        return peer
    forwarded = request.META.get(header_meta_key(settings.PIWEB_CLIENT_IP_HEADER), "")
    hops = [hop for hop in (part.strip() for part in forwarded.split(",")) if hop]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return peer  # a malformed header: count against the proxy, never a made-up name
        if not _trusted(address, networks):
            return str(address)
    return peer


def lockout_response(request, original_response=None, credentials=None):
    """429 with what happened, how long to wait and how an administrator unlocks."""
    from axes.helpers import get_client_username, get_cool_off

    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else 0
    context = {
        "username": get_client_username(request, credentials) or "",
        "cooloff_timedelta": cool_off,
        "cooloff_minutes": minutes,
    }
    return render(request, "registration/locked_out.html", context, status=429)
