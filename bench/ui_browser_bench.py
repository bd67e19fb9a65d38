"""The session page in headless Chromium, for the 1,002-entry real-shaped session
(tests/support/real_sessions.py): what a user waits for.

Usage:  .venv/bin/python bench/ui_bench.py --browser [--repeat 9]
        (or this file directly)

Prints, each the median (p50) of --repeat tries after a warm-up:
- first load: navigation start to the load event (the page with tree, chat, header);
- node click: a click on a tree row to its entry in the drawer (measured in the page);
- drawer open: with the drawer closed, a click on a row to the drawer shown with it;
- streamed token: a `text_delta` websocket frame arriving to its text in the DOM
  (frames published by the server's channel layer, as a run publishes them).
Targets (issue 27): first load ≤ 1 s, node click ≤ 100 ms, token ≤ 50 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.browser_support import (  # noqa: E402
    chromium,
    daphne,
    logged_in_context,
    real_shaped_session,
    test_database,
)

# Before any page script: note when each websocket frame with a text delta arrives.
FRAME_CLOCK = """
(() => {
  window.__frames = {};
  const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const ws = protocols ? new Native(url, protocols) : new Native(url);
    ws.addEventListener("message", (m) => {
      const at = performance.now();
      try {
        const p = JSON.parse(m.data);
        if (p.event === "text_delta") window.__frames[p.data.delta] = at;
      } catch (e) {}
    });
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { OPEN: 1, CLOSED: 3, CONNECTING: 0, CLOSING: 2 });
})();
"""

CLICK_TIMER = """
async ([id, closeDrawer]) => {
  const page = document.querySelector('.session-page');
  if (closeDrawer && !page.classList.contains('drawer-closed')) document.getElementById('toggle-drawer').click();
  const row = document.querySelector('#n-' + CSS.escape(id) + ' .preview');
  const pane = document.getElementById('entry-pane');
  const drawer = document.getElementById('drawer');
  const start = performance.now();
  return await new Promise((resolve) => {
    const done = () => pane.querySelector('[data-entry="' + id + '"]') && drawer.offsetParent !== null;
    const obs = new MutationObserver(() => { if (done()) { obs.disconnect(); resolve(performance.now() - start); } });
    obs.observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ['class'] });
    row.click();
    setTimeout(() => { obs.disconnect(); resolve(-1); }, 10000);
  });
}
"""

TOKEN_WAITER = """
(token) => new Promise((resolve) => {
  const box = document.getElementById('chat-live-text');
  const check = () => {
    if (box.textContent.includes(token) && window.__frames[token] !== undefined) {
      obs.disconnect();
      resolve(performance.now() - window.__frames[token]);
      return true;
    }
    return false;
  };
  const obs = new MutationObserver(check);
  obs.observe(box, { childList: true, characterData: true, subtree: true });
  setTimeout(() => { obs.disconnect(); resolve(-1); }, 10000);
})
"""


def p50(values):
    good = [v for v in values if v >= 0]
    return statistics.median(good) if good else float("nan")


def run(repeat: int) -> None:
    with test_database() as connection:
        from django.contrib.auth import get_user_model

        from sessions_app.services import events

        user = get_user_model().objects.create_user("bench-ui", password="bench-only")
        start = time.perf_counter()
        session = real_shaped_session(user)
        setup = time.perf_counter() - start
        with daphne(connection) as base, chromium() as browser:
            context = logged_in_context(
                browser, base, user, viewport={"width": 1280, "height": 800}
            )
            context.add_init_script(FRAME_CLOCK)
            page = context.new_page()
            url = f"/s/{session.pi_id}/"
            loads = []
            for i in range(repeat + 1):
                page.goto(url, wait_until="load")
                took = page.evaluate(
                    "() => { const n = performance.getEntriesByType('navigation')[0];"
                    " return n.loadEventEnd - n.startTime; }"
                )
                if i:
                    loads.append(took)
            page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
            ids = page.eval_on_selector_all(
                "#tree-panel .tn.node", "els => els.map(e => e.dataset.id).filter(Boolean)"
            )
            picks = [ids[(i * 7919) % len(ids)] for i in range(repeat + 1)]
            clicks = [page.evaluate(CLICK_TIMER, [pid, False]) for pid in picks][1:]
            drawers = [page.evaluate(CLICK_TIMER, [pid, True]) for pid in reversed(picks)][1:]
            run_id = str(uuid.uuid4())
            tokens = []
            for i in range(repeat * 3 + 1):
                token = f" tok{i}-{uuid.uuid4().hex[:6]}"
                # (start waiting in the page without awaiting it here, then publish)
                page.evaluate(f"(t) => {{ window.__wait = ({TOKEN_WAITER})(t); }}", token)
                events.publish_now(
                    session.pk, "text_delta", {"run_id": run_id, "kind": "text", "delta": token}
                )
                took = page.evaluate("() => window.__wait")
                if i:
                    tokens.append(took)
            context.close()
    entries = session.entry_count
    print(f"session: {entries} entries (real-shaped), set up in {setup:.1f} s; p50 of {repeat}")
    print(f"first load (navigation → load event)    {p50(loads):8.0f} ms   target ≤ 1000")
    print(f"node click → entry shown               {p50(clicks):8.1f} ms   target ≤ 100")
    print(f"drawer open (closed → shown with node) {p50(drawers):8.1f} ms")
    print(f"streamed token: ws frame → DOM         {p50(tokens):8.2f} ms   target ≤ 50")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    run(args.repeat)


if __name__ == "__main__":
    main()
