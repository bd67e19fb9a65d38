"""Who may call a view: the requests behind the ``test_it_requires_…`` tests of
tests/service/views/. Each view module's tests name their own routes here; the exhaustive
route × persona check stays tests/service/test_permissions_matrix.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.test import Client
from django.urls import reverse


@dataclass(frozen=True)
class Call:
    """One request to a named ``sessions_app`` route: the session's id comes first in the
    URL (unless ``per_session`` is false: the list, search, teams and usage pages), then
    ``args``."""

    route: str
    method: str = "GET"
    data: dict = field(default_factory=dict)
    args: tuple = ()
    per_session: bool = True

    def url(self, session) -> str:
        head = [session.pi_id] if self.per_session else []
        return reverse(f"sessions_app:{self.route}", args=[*head, *self.args])

    def send(self, client: Client, session):
        url = self.url(session)
        return (client.get if self.method == "GET" else client.post)(url, self.data)


def post(route: str, data: dict | None = None, args: tuple = (), per_session=True) -> Call:
    return Call(route, "POST", data or {}, args, per_session)


def statuses(client: Client, calls, session=None) -> dict[str, int]:
    """The status of each call, by route name."""
    return {call.route: call.send(client, session).status_code for call in calls}


def login_redirects(calls, session=None) -> dict[str, str]:
    """Where each call sends someone who is not signed in (the path of the redirect, or
    the status when there is none)."""
    client, out = Client(), {}
    for call in calls:
        response = call.send(client, session)
        redirected = response.status_code == 302
        out[call.route] = response["Location"].split("?")[0] if redirected else response.status_code
    return out


def each(calls, outcome) -> dict:
    """``outcome`` for every call, by route name: what the tests above compare against."""
    return {call.route: outcome for call in calls}
