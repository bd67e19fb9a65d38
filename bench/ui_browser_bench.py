"""The session page in headless Chromium, for the 1,060-entry real-shaped session
(tests/support/real_sessions.py): what a user waits for.

Usage:  .venv/bin/python bench/ui_bench.py --browser [--repeat 9]
        (or this file directly)

Prints, each the median (p50) of --repeat tries after a warm-up, each try started once
the previous one's background requests are over (`settle`):
- first load: navigation start to the load event (the page with tree, chat, header);
- node click: a click on a tree row to its entry in the drawer (measured in the page);
- drawer open: with the drawer closed, a click on a row to the drawer shown with it;
- streamed token: a `text_delta` websocket frame arriving to its text in the DOM
  (frames published by the server's channel layer, as a run publishes them).
Targets (issue 34): first load ≤ 400 ms, node click ≤ 50 ms; token ≤ 50 ms (issue 27).
The first load also says how much of it was the server's (the first byte) and how big the
page is (HTML and elements).
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


# Navigation timing of the page just loaded, from navigation start: the load event, the
# first byte of the response (the server's time plus the loopback) and the document parsed
# (domContentLoadedEventEnd: the DOM built and the deferred scripts run).
NAVIGATION_TIMES = """
() => {
  const n = performance.getEntriesByType('navigation')[0];
  return {load: n.loadEventEnd - n.startTime, first_byte: n.responseStart - n.startTime,
          parsed: n.domContentLoadedEventEnd - n.startTime};
}
"""


# Before any page script: count the page's htmx requests in flight, and note when the
# last one ended or the websocket opened (the panels' catch-up requests follow it).
REQUEST_COUNTER = """
(() => {
  window.__inflight = 0;
  window.__quietSince = 0;
  const quiet = () => { window.__quietSince = performance.now(); };
  document.addEventListener("htmx:beforeRequest", () => { window.__inflight += 1; });
  document.addEventListener("htmx:afterRequest", () => {
    window.__inflight = Math.max(0, window.__inflight - 1);
    quiet();
  });
  document.addEventListener("piweb:ws-open", quiet);
})();
"""
QUIET_MS = 500


def settle(page) -> None:
    """Wait until the page's websocket is open and no htmx request has been in flight for
    QUIET_MS: what a page asks once it is loaded (the panels' catch-up after the socket
    opens, an entry's scores, changes and comments after a click) is not part of the next
    timing. (daphne is one Python process: without this the next page competes with
    them, and the figure measures the bench's own pace.)"""
    page.wait_for_function("() => document.body.dataset.ws === 'open'", timeout=30000)
    page.wait_for_function(
        f"() => window.__inflight === 0 && performance.now() - window.__quietSince > {QUIET_MS}",
        timeout=30000,
    )


def p50(values):
    good = [v for v in values if v >= 0]
    return statistics.median(good) if good else float("nan")


def run(repeat: int, with_tokens: bool = True) -> None:
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
            context.add_init_script(REQUEST_COUNTER)
            page = context.new_page()
            url = f"/s/{session.pi_id}/"
            loads, firsts, parsed = [], [], []
            for i in range(repeat + 1):
                page.goto(url, wait_until="load")
                took = page.evaluate(NAVIGATION_TIMES)
                settle(page)
                if i:
                    loads.append(took["load"])
                    firsts.append(took["first_byte"])
                    parsed.append(took["parsed"])
            nodes = page.evaluate("() => document.getElementsByTagName('*').length")
            html_kb = page.evaluate(
                "() => performance.getEntriesByType('navigation')[0].decodedBodySize / 1024"
            )
            settle(page)
            ids = page.eval_on_selector_all(
                "#tree-panel .tn.node", "els => els.map(e => e.dataset.id).filter(Boolean)"
            )
            picks = [ids[(i * 7919) % len(ids)] for i in range(repeat + 1)]
            clicks, drawers = [], []
            for pid in picks:
                clicks.append(page.evaluate(CLICK_TIMER, [pid, False]))
                settle(page)
            for pid in reversed(picks):
                drawers.append(page.evaluate(CLICK_TIMER, [pid, True]))
                settle(page)
            clicks, drawers = clicks[1:], drawers[1:]
            run_id = str(uuid.uuid4())
            tokens = []
            for i in range(repeat * 3 + 1 if with_tokens else 0):
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
    print(f"first load (navigation → load event)    {p50(loads):8.0f} ms   target ≤ 400")
    print(f"  of which: first byte (server)         {p50(firsts):8.0f} ms")
    print(f"  of which: document parsed (DOM ready) {p50(parsed):8.0f} ms")
    print(f"  the page: {html_kb:,.0f} KB of HTML, {nodes:,} elements")
    print(f"node click → entry shown               {p50(clicks):8.1f} ms   target ≤ 50")
    print(f"drawer open (closed → shown with node) {p50(drawers):8.1f} ms")
    if with_tokens:
        print(f"streamed token: ws frame → DOM         {p50(tokens):8.2f} ms   target ≤ 50")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--no-tokens", action="store_true", help="skip the streamed tokens")
    args = parser.parse_args()
    run(args.repeat, with_tokens=not args.no_tokens)


if __name__ == "__main__":
    main()
