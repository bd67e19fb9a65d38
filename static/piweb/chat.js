// Chat panel: send / steer / follow up / stop and the live run (streamed text, tool calls,
// bash snapshots). The transcript and the queue refresh themselves (their hx-trigger) on
// the same events. Server events arrive as DOM events `piweb:<event>` from piweb.js (one
// websocket per page).
//
// Runs are per branch: several branches of one session may run at once, every event
// carries its run's id, and this page keeps to the run of the branch it shows (`runId`;
// the server says which: the panel's data-run-id, the socket's run_state, the state
// URL after the leaf moved). A run it does not know yet is asked about once.
(function () {
  "use strict";
  var root, input, live, liveText, liveThinking, liveTools, statusEl, notice, form;
  var runId = null;
  var others = {}; // runs known to be on other branches
  var sending = false; // a send is on its way: the next unknown run is this page's
  var refreshing = null;

  function post(url, data) {
    var body = new URLSearchParams(data || {});
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": window.piweb.csrfToken(), "Content-Type": "application/x-www-form-urlencoded" },
      body: body,
    }).then(function (resp) {
      return resp.text().then(function (html) {
        return { ok: resp.ok, status: resp.status, html: html };
      });
    });
  }

  function showNotice(html) {
    notice.innerHTML = html; // server-rendered, escaped partial
  }

  // A notice about a state ("Stopping…", "Queued as a follow-up") goes when the state
  // ends, without a reload: `codes` are the notices (their data-code) no longer true.
  function dropNotice(codes) {
    var shown = notice && notice.querySelector(".notice[data-code]");
    if (shown && codes.indexOf(shown.dataset.code) !== -1) notice.innerHTML = "";
  }

  function formatSize(bytes) {
    if (bytes < 1024) return bytes + "B";
    if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + "KB";
    return (bytes / (1024 * 1024)).toFixed(1) + "MB";
  }

  function setRunning(on) {
    root.dataset.running = on ? "true" : "false";
  }

  function resetLive() {
    liveText.textContent = "";
    liveThinking.querySelector("pre").textContent = "";
    liveThinking.hidden = true;
    liveTools.innerHTML = "";
    statusEl.textContent = "";
    live.hidden = true;
  }

  function scrollDown() {
    var box = document.getElementById("chat-transcript");
    if (box) box.scrollTop = box.scrollHeight;
    live.scrollIntoView({ block: "end" });
  }

  function toolBox(id, name, args) {
    var box = liveTools.querySelector('[data-tool-call-id="' + CSS.escape(id) + '"]');
    if (box) return box;
    box = document.createElement("div");
    box.className = "live-tool running";
    box.dataset.toolCallId = id;
    var head = document.createElement("div");
    head.className = "live-tool-head";
    var label = name === "bash" && args && args.command ? "$ " + args.command : name + " " + JSON.stringify(args || {});
    var code = document.createElement("code");
    code.textContent = label;
    head.appendChild(code);
    var info = document.createElement("span");
    info.className = "hint live-tool-info";
    head.appendChild(info);
    var pre = document.createElement("pre");
    pre.className = "live-bash";
    box.appendChild(head);
    box.appendChild(pre);
    liveTools.appendChild(box);
    return box;
  }

  function applySnapshot(box, snap) {
    box.querySelector("pre").textContent = snap.text || "";
    var info = "showing lines " + snap.start_line + "\u2013" + snap.end_line + " of " + snap.total_lines +
      " \u00b7 " + formatSize(snap.total_bytes);
    if (snap.truncated) info += " (truncated)";
    box.querySelector(".live-tool-info").textContent = info;
    var pre = box.querySelector("pre");
    pre.scrollTop = pre.scrollHeight;
  }

  function mine(detail) {
    if (!detail || !detail.run_id) return false;
    if (runId !== detail.run_id) {
      if (others[detail.run_id]) return false;
      if (!sending) { refreshState(); return false; }
      runId = detail.run_id;
      resetLive();
    }
    live.hidden = false;
    setRunning(true);
    return true;
  }

  // The server's word on the runs (`run_context`): which is this branch's, which others'.
  function applyContext(ctx) {
    ctx = ctx || {};
    others = {};
    Object.keys(ctx.runs || {}).forEach(function (id) { if (id !== ctx.active) others[id] = true; });
    if (ctx.active && ctx.active !== runId && sending) sending = false;
    runId = ctx.active || null;
    root.dataset.runId = runId || "";
    loadState(ctx.run);
    if (!ctx.run) {
      if (runId) { live.hidden = true; setRunning(true); } // queued, nothing streamed yet
      else { setRunning(false); dropNotice(["stopping", "queued", "held"]); }
    }
    window.piweb.dispatch("queue_changed"); // the queue shown is this run's now
  }

  function refreshState() {
    if (refreshing || !root.dataset.stateUrl) return;
    refreshing = fetch(root.dataset.stateUrl, { credentials: "same-origin" })
      .then(function (resp) { return resp.ok ? resp.json() : null; })
      .then(function (ctx) { refreshing = null; if (ctx) applyContext(ctx); },
            function () { refreshing = null; });
  }

  function loadState(state) {
    resetLive();
    if (!state || !state.run_id) return;
    runId = state.run_id;
    root.dataset.runId = runId;
    live.hidden = false;
    setRunning(true);
    liveText.textContent = state.text || "";
    if (state.thinking) {
      liveThinking.hidden = false;
      liveThinking.querySelector("pre").textContent = state.thinking;
    }
    (state.order || []).forEach(function (id) {
      var t = state.tools[id];
      if (!t) return;
      var box = toolBox(id, t.name, t.args);
      if (t.snapshot) applySnapshot(box, t.snapshot);
      if (t.done) box.classList.remove("running");
    });
    if (state.status && state.status !== "running") statusEl.textContent = state.status + "\u2026";
  }

  function bind() {
    document.addEventListener("piweb:text_delta", function (ev) {
      var d = ev.detail;
      if (!mine(d)) return;
      if (d.kind === "thinking") {
        liveThinking.hidden = false;
        liveThinking.querySelector("pre").textContent += d.delta;
      } else {
        liveText.textContent += d.delta;
      }
      statusEl.textContent = "";
    });
    document.addEventListener("piweb:tool_start", function (ev) {
      var d = ev.detail;
      if (!mine(d)) return;
      toolBox(d.tool_call_id, d.name, d.args);
      scrollDown();
    });
    document.addEventListener("piweb:bash_snapshot", function (ev) {
      var d = ev.detail;
      if (!mine(d)) return;
      applySnapshot(toolBox(d.tool_call_id, "bash", null), d);
    });
    document.addEventListener("piweb:tool_end", function (ev) {
      var d = ev.detail;
      if (!mine(d)) return;
      var box = toolBox(d.tool_call_id, "tool", null);
      box.classList.remove("running");
      if (d.is_error) box.classList.add("error");
    });
    document.addEventListener("piweb:message_end", function (ev) {
      var d = ev.detail;
      if (!d || d.run_id !== runId) return;
      if (d.role === "assistant") {
        liveText.textContent = "";
        liveThinking.querySelector("pre").textContent = "";
        liveThinking.hidden = true;
      } else if (d.tool_call_id) {
        var box = liveTools.querySelector('[data-tool-call-id="' + CSS.escape(d.tool_call_id) + '"]');
        if (box) box.remove();
      } else if (d.role === "bashExecution") {
        liveTools.innerHTML = "";
      }
    });
    document.addEventListener("piweb:run_status", function (ev) {
      var d = ev.detail;
      if (!mine(d)) return;
      if (d.status === "retrying") {
        statusEl.textContent = "Provider error (" + d.error + "); retrying in " + d.delay + "s (attempt " + d.attempt + ")\u2026";
      } else if (d.status === "compacting") {
        statusEl.textContent = "Context too long: compacting, then retrying\u2026";
      } else {
        statusEl.textContent = "";
      }
    });
    document.addEventListener("piweb:run_end", function (ev) {
      var d = ev.detail || {};
      if (d.run_id && d.run_id !== runId) { delete others[d.run_id]; return; }
      runId = null;
      root.dataset.runId = "";
      resetLive();
      setRunning(false);
      dropNotice(["stopping", "queued", "held"]);
    });
    document.addEventListener("piweb:run_state", function (ev) { applyContext(ev.detail); });
    // Another node is shown: its branch may have a run of its own, or none.
    document.addEventListener("piweb:leaf_moved", function () { refreshState(); });
    // The queue shown is this branch's run's.
    document.addEventListener("htmx:configRequest", function (ev) {
      var elt = ev.detail && ev.detail.elt;
      if (elt && elt.id === "chat-queue" && runId) ev.detail.parameters.run = runId;
    });
    document.addEventListener("htmx:afterSettle", syncPiWriting);
    // The transcript refreshes itself (its hx-trigger); after each swap, follow the end.
    document.addEventListener("htmx:afterSwap", function (ev) {
      var target = ev.detail && ev.detail.target;
      if (target && target.id === "chat-transcript") scrollDown();
      // The run took the queued message (or it was cancelled): it is no longer queued.
      if (target && target.id === "chat-queue" && !target.querySelector(".queued")) dropNotice(["queued"]);
    });
    document.addEventListener("piweb:prefill-input", function (ev) {
      if (!input) return;
      input.value = (ev.detail && ev.detail.text) || "";
      input.focus();
    });

    if (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var text = input.value;
        if (!text.trim()) return;
        if (root.dataset.running === "true") { queueMessage("steer"); return; }
        sendMessage(text);
      });
      document.getElementById("chat-steer").addEventListener("click", function () { queueMessage("steer"); });
      document.getElementById("chat-follow-up").addEventListener("click", function () { queueMessage("follow_up"); });
      document.getElementById("chat-queue").addEventListener("click", function (ev) {
        var button = ev.target.closest(".queued-cancel");
        if (!button) return;
        button.disabled = true;
        post(root.dataset.unqueueUrl, { item: button.dataset.item }).then(function (res) {
          showNotice(res.html);
          window.piweb.dispatch("queue_changed"); // at once, before the socket's own
        });
      });
      input.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" && ev.altKey && !ev.isComposing) {
          ev.preventDefault();
          if (root.dataset.running === "true") queueMessage("follow_up");
          else form.requestSubmit();
        } else if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
          ev.preventDefault();
          form.requestSubmit();
        }
      });
      var modelForm = root.querySelector(".chat-model-form");
      if (modelForm) {
        modelForm.addEventListener("submit", function (ev) {
          ev.preventDefault();
          var select = modelForm.querySelector("select");
          post(modelForm.action, { profile: select.value }).then(function (res) {
            showNotice(res.html);
            if (!res.ok) return;
            var option = select.options[select.selectedIndex];
            var label = root.querySelector(".chat-model");
            if (label) label.textContent = option.value;
            updateThinking((option.dataset.levels || "off").split(","));
          });
        });
      }
      var thinkingForm = document.getElementById("chat-thinking-form");
      if (thinkingForm) {
        thinkingForm.addEventListener("submit", function (ev) {
          ev.preventDefault();
          var level = document.getElementById("chat-thinking-select").value;
          post(thinkingForm.action, { level: level }).then(function (res) { showNotice(res.html); });
        });
      }
      document.getElementById("chat-stop").addEventListener("click", function () {
        post(root.dataset.stopUrl, runId ? { run: runId } : {}).then(function (res) {
          showNotice(res.html);
          // The queued messages come back to the box, before what is typed there (as pi).
          var restored = notice.querySelector(".chat-restored");
          if (!restored) return;
          input.value = [restored.value, input.value].filter(function (t) { return t.trim(); }).join("\n\n");
          restored.remove();
          input.focus();
        });
      });
    }
  }

  function sendMessage(text) {
    var send = document.getElementById("chat-send");
    send.disabled = true;
    sending = true;
    post(root.dataset.sendUrl, { text: text }).then(function (res) {
      send.disabled = false;
      sending = false;
      showNotice(res.html);
      if (res.ok) {
        input.value = "";
        var sent = notice.querySelector("[data-run-id]");
        var id = sent && sent.dataset.runId;
        if (id && id !== runId) {
          if (runId) others[runId] = true; // (adopted in the meantime: another branch's)
          delete others[id];
          runId = id;
          root.dataset.runId = id;
          resetLive();
        }
        setRunning(true);
      }
    }, function () {
      send.disabled = false;
      sending = false;
      notice.textContent = "Could not reach the server.";
    });
  }

  // While the agent works a message waits in the session's queue: "steer" (after the
  // current tool calls) or "follow_up" (when the run would end). If the run ended
  // meanwhile, it is sent as a new message.
  function queueMessage(mode) {
    var text = input.value;
    if (!text.trim()) return;
    input.value = ""; // at once: the next message may be typed while this one is stored
    function giveBack() { if (!input.value.trim()) input.value = text; }
    var data = { text: text, mode: mode };
    if (runId) data.run = runId;
    post(root.dataset.queueUrl, data).then(function (res) {
      if (res.status === 400 && /data-code="not_running"/.test(res.html)) {
        setRunning(false);
        giveBack();
        sendMessage(text);
        return;
      }
      showNotice(res.html);
      if (res.ok) window.piweb.dispatch("queue_changed");
      else giveBack();
    }, function () {
      giveBack();
      notice.textContent = "Could not reach the server.";
    });
  }

  // Live takeover: while pi writes the session (#pi-file[data-pi-writing], polled by
  // htmx until pi is quiet) the chat cannot send; the box offers a fork instead.
  function syncPiWriting() {
    var box = document.getElementById("pi-file");
    var writing = !!(box && box.dataset.piWriting);
    var send = document.getElementById("chat-send");
    if (send) send.disabled = writing;
    if (input) input.disabled = writing;
    if (root) root.dataset.piWriting = writing ? "true" : "false";
  }

  // The thinking control: shown for reasoning models only, with the levels they support.
  function updateThinking(levels) {
    var thinkingForm = document.getElementById("chat-thinking-form");
    var select = document.getElementById("chat-thinking-select");
    if (!thinkingForm || !select) return;
    var reasoning = !(levels.length === 1 && levels[0] === "off");
    var current = select.value;
    while (select.firstChild) select.removeChild(select.firstChild);
    levels.forEach(function (level) {
      var option = document.createElement("option");
      option.value = level;
      option.textContent = level;
      if (level === current) option.selected = true;
      select.appendChild(option);
    });
    thinkingForm.hidden = !reasoning;
  }

  function init() {
    root = document.getElementById("chat");
    if (!root || root.dataset.bound) return;
    root.dataset.bound = "1";
    input = document.getElementById("chat-input");
    form = document.getElementById("chat-form");
    live = document.getElementById("chat-live");
    liveText = document.getElementById("chat-live-text");
    liveThinking = document.getElementById("chat-live-thinking");
    liveTools = document.getElementById("chat-live-tools");
    statusEl = document.getElementById("chat-status");
    notice = document.getElementById("chat-notice");
    bind();
    syncPiWriting();
    runId = root.dataset.runId || null;
    var initial = document.getElementById("chat-run-state");
    if (initial) {
      try { loadState(JSON.parse(initial.textContent)); } catch (e) { /* no state */ }
    }
    scrollDown();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
