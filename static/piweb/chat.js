// Chat panel: the live run (streamed text, tool calls, bash snapshots) and what the box's
// requests need to know about it. Send, Steer, Follow up, Stop, the model and thinking
// pickers and a queued message's Cancel are htmx (hx-post, answered by a notice partial in
// #chat-notice); this file only adjusts them through htmx's events: Enter while the agent
// works goes to the queue as a steer, every request names this branch's run, and a sent
// message's run becomes the one followed. The transcript and the queue refresh themselves
// (their hx-trigger). Server events arrive as DOM events `piweb:<event>` from piweb.js (one
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
    var shown = root.dataset.runId || null; // the run whose queue the panel shows
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
    // The queue shown is this run's now (its own changes come as queue_changed).
    if ((ctx.active || null) !== shown) window.piweb.dispatch("queue_changed");
  }

  function refreshState() {
    if (refreshing || !root.dataset.stateUrl) return;
    refreshing = window.piweb.request(root.dataset.stateUrl)
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
      input.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" && ev.altKey && !ev.isComposing) {
          ev.preventDefault();
          if (running()) document.getElementById("chat-follow-up").click();
          else form.requestSubmit();
        } else if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
          ev.preventDefault();
          form.requestSubmit();
        }
      });
      document.addEventListener("htmx:configRequest", configure);
      document.addEventListener("htmx:beforeRequest", function (ev) {
        if (ev.detail.pathInfo && ev.detail.pathInfo.requestPath === root.dataset.sendUrl && ev.detail.elt === form) sending = true;
      });
      document.addEventListener("htmx:afterRequest", answered);
      document.addEventListener("htmx:sendError", function (ev) {
        if (!root.contains(ev.detail.elt)) return;
        sending = false;
        giveBack(ev.detail);
        notice.textContent = "Could not reach the server.";
      });
    }
    // The model changed (the picker, the notice's fix, /model): the header follows.
    document.addEventListener("piweb:model-switched", function (ev) {
      var profile = ev.detail && ev.detail.profile;
      var select = document.getElementById("chat-model-select");
      var label = document.getElementById("chat-model");
      if (!select || !profile) return;
      var option = Array.prototype.find.call(select.options, function (o) { return o.value === profile; });
      if (!option) return;
      select.value = profile;
      if (label) label.textContent = profile;
      updateThinking((option.dataset.levels || "off").split(","));
    });
    document.addEventListener("piweb:thinking-set", function (ev) {
      var select = document.getElementById("chat-thinking-select");
      var level = ev.detail && ev.detail.level;
      if (!select || !level) return;
      if (!Array.prototype.some.call(select.options, function (o) { return o.value === level; })) {
        var option = document.createElement("option");
        option.value = option.textContent = level;
        select.appendChild(option);
      }
      select.value = level;
    });
  }

  function running() { return root.dataset.running === "true"; }

  // Before any request of the panel leaves (htmx:configRequest): Enter while the agent works
  // queues a steer instead of sending; a queued message and Stop name this branch's run;
  // an empty box sends nothing. composer.js has already turned a slash command into its
  // own request (its listener is on the form, so it runs first).
  function configure(ev) {
    var d = ev.detail;
    var elt = d.elt;
    if (ev.defaultPrevented || !elt || !root.contains(elt)) return; // (a command done in the page)
    if (elt.id === "chat-stop") {
      if (runId) d.parameters.run = runId;
      return;
    }
    if (elt !== form && !form.contains(elt)) return;
    if (d.path === root.dataset.sendUrl && running()) {
      d.path = root.dataset.queueUrl;
      d.parameters.mode = "steer";
    }
    var text = d.parameters.text || "";
    if (d.path === root.dataset.queueUrl) {
      if (!text.trim()) { ev.preventDefault(); return; }
      if (runId) d.parameters.run = runId;
      input.value = ""; // at once: the next message may be typed while this one is stored
    } else if (d.path === root.dataset.sendUrl) {
      if (!text.trim() && !d.formData.has("images")) ev.preventDefault();
    }
  }

  // A queued message that was not stored comes back to the box (unless something new is there).
  function giveBack(detail) {
    if (!detail.pathInfo || detail.pathInfo.requestPath !== root.dataset.queueUrl) return;
    var text = detail.requestConfig && detail.requestConfig.parameters.text;
    if (text && !input.value.trim()) input.value = text;
  }

  // After a request of the panel (its notice is in #chat-notice by now).
  function answered(ev) {
    var d = ev.detail;
    if (!d.elt || !root.contains(d.elt) || !d.xhr) return;
    var path = d.pathInfo && d.pathInfo.requestPath;
    var ok = d.xhr.status >= 200 && d.xhr.status < 300;
    if (path === root.dataset.sendUrl && (d.elt === form)) {
      sending = false;
      if (!ok) return;
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
    } else if (path === root.dataset.queueUrl) {
      if (ok) { window.piweb.dispatch("queue_changed"); return; }
      giveBack(d);
      // The run ended meanwhile: the message is sent as a new one.
      if (d.xhr.status === 400 && notice.querySelector('.notice[data-code="not_running"]')) {
        notice.innerHTML = "";
        setRunning(false);
        form.requestSubmit();
      }
    } else if (d.elt.id === "chat-stop") {
      if (!running()) dropNotice(["stopping"]); // the run ended before the answer came
      // The queued messages come back to the box, before what is typed there (as pi).
      var restored = notice.querySelector(".chat-restored");
      if (!restored) return;
      input.value = [restored.value, input.value].filter(function (t) { return t.trim(); }).join("\n\n");
      restored.remove();
      input.focus();
    } else if (d.elt.classList.contains("queued-cancel") && ok) {
      window.piweb.dispatch("queue_changed"); // at once, before the socket's own
    }
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

  // A session with no usable folder (imported, followed) opens on its messages; where to
  // continue is asked once the person starts to write. The choice reloads the page: what
  // was typed is kept for it (sessionStorage, this tab only) and put back.
  function askWhereWhenWriting() {
    var box = document.querySelector("#workspace-box[data-when-writing]");
    if (!box || !input) return;
    function show() {
      box.hidden = false;
      input.removeEventListener("focus", show);
      input.removeEventListener("input", show);
    }
    input.addEventListener("focus", show);
    input.addEventListener("input", show);
    if (document.activeElement === input) show();
  }
  function draftKey() { return "piweb-draft-" + root.dataset.session; }
  function keepDraftAcrossReload() {
    try {
      var draft = sessionStorage.getItem(draftKey());
      if (draft !== null) {
        sessionStorage.removeItem(draftKey());
        if (input && !input.value) input.value = draft;
      }
    } catch (e) { /* storage refused */ }
    document.addEventListener("htmx:beforeRequest", function (ev) {
      if (!input || !input.value.trim() || !ev.detail.elt || ev.detail.elt.id !== "workspace-form") return;
      try { sessionStorage.setItem(draftKey(), input.value); } catch (e) { /* storage refused */ }
    });
    document.addEventListener("htmx:afterRequest", function (ev) {
      var d = ev.detail;
      if (!d.elt || d.elt.id !== "workspace-form" || !d.xhr || d.xhr.status < 300) return;
      try { sessionStorage.removeItem(draftKey()); } catch (e) { /* storage refused */ } // refused: no reload
    });
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
    keepDraftAcrossReload();
    askWhereWhenWriting();
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
