"""The session page's live header: entries, tokens, cost and the context gauge.

The header is its own partial (`session_head`), fetched again whenever the session's
websocket says something changed (an entry appended, a run or a job ended, the leaf
moved), so it never lags the tree.
"""

from __future__ import annotations

from sessions_app.selectors.llm.catalog import resolve_profile
from sessions_app.selectors.llm.windows import context_window
from sessions_app.selectors.panels.context_chart import context_window_for, current_context
from sessions_app.selectors.panels.page import usage_context


def context_gauge(session) -> dict:
    """The context on the session's active branch as it stands now, against the window
    of the model the branch last used (the configured profile's window otherwise)."""
    chart = current_context(session)
    default = context_window(resolve_profile(session.model_profile))
    window = context_window_for(chart.get("model"), default) or 0
    used = int(chart.get("current") or 0)
    threshold = max(0, window - chart["reserve"]) if window else 0
    percent = min(100.0, 100.0 * used / window) if window else 0.0
    return {
        "used": used,
        "window": window,
        "threshold": threshold,
        "percent": round(percent, 1),
        "threshold_percent": round(100.0 * threshold / window, 1) if window else 0,
        "over": bool(threshold) and used >= threshold,
    }


def head_context(session) -> dict:
    """What the header partial shows."""
    context = usage_context(session)
    context["gauge"] = context_gauge(session)
    return context
