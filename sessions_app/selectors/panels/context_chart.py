"""The session page's context chart: how the context filled up along one branch."""

from __future__ import annotations

from django.conf import settings

from sessions_app.core.context_chart import context_now, context_now_from_rows, context_timeline
from sessions_app.models import Session
from sessions_app.selectors.llm.windows import compaction_settings, session_window, window_of
from sessions_app.selectors.paths import (
    load_path,
    load_path_gauge_rows,
    load_path_tail,
    load_payloads,
)


def context_window_for(model_key: str | None, default: int) -> int:
    """The context window of a `provider/model` key: PIWEB_MODEL_CONTEXT_WINDOWS when it
    names the model, else the model catalog's (pi's models, models.json, environment
    profiles), else `default`."""
    windows = settings.PIWEB_MODEL_CONTEXT_WINDOWS
    if model_key:
        for name in (model_key, model_key.split("/", 1)[-1]):
            if isinstance(windows.get(name), int):
                return windows[name]
        provider, _, model_id = model_key.partition("/")
        found = window_of(provider, model_id) if model_id else window_of(None, provider)
        if found:
            return found
    return default


def context_chart(session: Session, leaf_pi_id=None) -> dict:
    """The context-over-time data of the branch ending at `leaf_pi_id` (default: the
    session's leaf), with each turn's window and compaction threshold."""
    path = load_path(session) if leaf_pi_id is None else load_path(session, leaf_pi_id)
    timeline = context_timeline(path)
    default = session_window(session)
    reserve = compaction_settings(session).reserve_tokens
    for point in timeline["points"]:
        point["window"] = context_window_for(point["model"], default)
        point["threshold"] = max(0, point["window"] - reserve)
    timeline["reserve"] = reserve
    timeline["leaf"] = path[-1].get("id") if path else None
    return timeline


CURRENT_CONTEXT_TAIL = 64  # entries read first: usually back past the last turn with usage


def current_context(session: Session) -> dict:
    """The chart's last figures at the session's leaf (``current``, ``model``) and the
    reserve, reading only the end of the path: back to the last compaction or the last
    turn whose usage gives the context size (what the header's gauge needs)."""
    reserve = compaction_settings(session).reserve_tokens
    hidden, tail = load_path_tail(session, CURRENT_CONTEXT_TAIL)
    now = context_now(tail, complete=hidden == 0)
    if now is None:  # no turn with usage near the leaf: the whole path counts, but only
        # its columns travel, and the few payloads whose figure is not the stored one
        now = context_now_from_rows(load_path_gauge_rows(session), load_payloads)
    return {**now, "reserve": reserve}
