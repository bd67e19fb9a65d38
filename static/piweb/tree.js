// The session tree: selection, keyboard navigation, folding, filter/search, live
// refresh. No build step. The server renders every row; this file only moves the
// selection, asks htmx for partials and keeps the view state in the URL.
(function () {
  "use strict";

  var state = { leaf: "", target: "", filter: "default", q: "", open: {} };
  var refreshTimer = null;

  function wrap() { return document.querySelector("#tree-panel .tree-wrap"); }
  function treeEl() { return document.querySelector("#tree-panel .tree"); }

  function readState() {
    var w = wrap();
    if (!w) return;
    state.leaf = w.dataset.leafParam || "";
    state.target = w.dataset.target || state.target || "";
    state.filter = w.dataset.filter || "default";
    state.q = w.dataset.q || "";
  }

  function openIds() {
    var ids = [];
    document.querySelectorAll("#tree-panel .tgroup:not(.collapsed)").forEach(function (g) {
      if (g.dataset.group) ids.push(g.dataset.group);
    });
    return ids;
  }

  function query(extra) {
    var p = new URLSearchParams();
    if (state.leaf) p.set("leaf", state.leaf);
    if (state.target) p.set("target", state.target);
    if (state.filter && state.filter !== "default") p.set("filter", state.filter);
    if (state.q) p.set("q", state.q);
    var open = openIds();
    if (open.length) p.set("open", open.slice(0, 400).join(","));
    if (extra) Object.keys(extra).forEach(function (k) { p.set(k, extra[k]); });
    return p.toString();
  }

  function syncUrl() {
    var p = new URLSearchParams();
    if (state.leaf) p.set("leaf", state.leaf);
    if (state.target) p.set("target", state.target);
    if (state.filter && state.filter !== "default") p.set("filter", state.filter);
    if (state.q) p.set("q", state.q);
    var qs = p.toString();
    history.replaceState(null, "", location.pathname + (qs ? "?" + qs : ""));
  }

  function refresh() {
    var w = wrap();
    if (!w || !window.htmx) return;
    var url = w.dataset.treeUrl + "?" + query();
    var scroller = treeEl();
    var top = scroller ? scroller.scrollTop : 0;
    // An explicit source gives the tree its own request queue (htmx queues "last" per
    // source element; without one every htmx.ajax call on the page shares <body>).
    return htmx.ajax("GET", url, { source: "#tree-panel", target: "#tree-panel", swap: "innerHTML" }).then(function () {
      var t = treeEl();
      if (t) t.scrollTop = top;
      syncUrl();
      restoreSelection(false);
    });
  }

  function scheduleRefresh(delay) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, delay == null ? 250 : delay);
  }

  // --- selection ----------------------------------------------------------------------

  function rows() {
    var t = treeEl();
    if (!t) return [];
    return Array.prototype.filter.call(t.querySelectorAll(".tn, .tgroup-toggle"), function (r) {
      return r.offsetParent !== null;
    });
  }

  function current() {
    var t = treeEl();
    return t ? t.querySelector(".tn.selected, .tgroup-toggle.selected, .tn.fold.selected, .tn.more.selected") : null;
  }

  function select(row, opts) {
    opts = opts || {};
    var t = treeEl();
    if (!row || !t) return;
    t.querySelectorAll(".selected").forEach(function (r) {
      r.classList.remove("selected");
      r.setAttribute("aria-selected", "false");
      r.tabIndex = -1;
    });
    row.classList.add("selected");
    row.setAttribute("aria-selected", "true");
    row.tabIndex = 0;
    if (opts.focus !== false) row.focus({ preventScroll: true });
    if (opts.scroll !== false) row.scrollIntoView({ block: "nearest" });
    // The leaf shown by default is not the user's choice: it stays out of the address, so a
    // reload does not open the drawer on it.
    if (row.dataset.id && opts.remember !== false) {
      state.target = row.dataset.id;
      syncUrl();
    }
  }

  function restoreSelection(focus) {
    var row = state.target ? document.getElementById("n-" + state.target) : null;
    var chosen = !!row;
    if (!row) row = document.querySelector("#tree-panel .tn.view-leaf");
    if (row) {
      select(row, { focus: !!focus, remember: chosen });
      row.scrollIntoView({ block: "center" });
    }
  }

  function openEntry(id) {
    var w = wrap();
    if (!w || !id) return;
    var url = w.dataset.entryUrl.replace("__ID__", encodeURIComponent(id));
    var leaf = w.dataset.viewLeaf;
    htmx.ajax("GET", url + (leaf ? "?leaf=" + encodeURIComponent(leaf) : ""), {
      source: "#entry-pane",
      target: "#entry-pane",
      swap: "innerHTML",
    });
  }

  function activate(row) {
    if (!row) return;
    if (row.classList.contains("fold") || row.classList.contains("more")) {
      row.click();
      return;
    }
    if (row.classList.contains("tgroup-toggle")) {
      toggleGroup(row.parentElement);
      return;
    }
    select(row);
    openEntry(row.dataset.id);
  }

  function toggleGroup(group) {
    if (!group) return;
    group.classList.toggle("collapsed");
    var collapsed = group.classList.contains("collapsed");
    var toggle = group.querySelector(":scope > .tgroup-toggle");
    if (toggle) {
      var verb = toggle.querySelector(".tg-verb");
      if (verb) verb.textContent = collapsed ? "▸ unfold" : "▾ fold";
      select(toggle);
    }
    var head = group.querySelector(":scope > .tn.node");
    if (head) {
      var chev = head.querySelector(".chev");
      if (chev) chev.textContent = collapsed ? "▸" : "▾";
      select(head);
    }
  }

  function groupOf(row) {
    if (!row) return null;
    var parent = row.parentElement;
    if (parent && parent.classList.contains("tgroup") && parent.classList.contains("branch")) return parent;
    return row.closest(".tgroup");
  }

  function goTo(id) {
    var row = document.getElementById("n-" + id);
    if (row && row.offsetParent !== null) {
      select(row);
      row.scrollIntoView({ block: "center" });
      openEntry(id);
      return;
    }
    // Not drawn yet (folded or in a collapsed branch): ask the server to lay the tree
    // out with this node as target, which expands the way to it.
    state.target = id;
    refresh().then(function () { openEntry(id); });
  }

  function siblings(row) {
    if (!row || !row.dataset.id) return [];
    var parent = row.dataset.parent || "";
    return rows().filter(function (r) {
      return r.classList.contains("node") && (r.dataset.parent || "") === parent;
    });
  }

  function onKey(ev) {
    if (ev.target.closest("input, textarea, select")) return;
    var list = rows();
    var row = current();
    var i = row ? list.indexOf(row) : -1;
    switch (ev.key) {
      case "ArrowDown":
      case "j":
        select(list[Math.min(list.length - 1, i + 1)] || list[0]);
        break;
      case "ArrowUp":
      case "k":
        select(list[Math.max(0, i - 1)] || list[0]);
        break;
      case "ArrowRight":
      case "ArrowLeft": {
        var sibs = siblings(row);
        var j = sibs.indexOf(row);
        if (j < 0 || sibs.length < 2) return;
        var next = ev.key === "ArrowRight" ? sibs[(j + 1) % sibs.length] : sibs[(j - 1 + sibs.length) % sibs.length];
        select(next);
        break;
      }
      case "Home":
        select(list[0]);
        break;
      case "End":
        select(list[list.length - 1]);
        break;
      case "Enter":
      case " ":
        activate(row);
        break;
      case "f": {
        if (!row) return;
        if (row.classList.contains("fold") || row.classList.contains("more")) activate(row);
        else toggleGroup(groupOf(row));
        break;
      }
      case "/": {
        var s = document.getElementById("tree-search");
        if (s) s.focus();
        break;
      }
      default:
        return;
    }
    ev.preventDefault();
  }

  // --- copying links --------------------------------------------------------------------

  function copyText(text, feedbackEl) {
    function done() {
      if (!feedbackEl) return;
      feedbackEl.classList.add("copied");
      setTimeout(function () { feedbackEl.classList.remove("copied"); }, 1200);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else {
      fallbackCopy(text);
      done();
    }
  }

  function fallbackCopy(text) {
    var ta = document.createElement("textarea");
    ta.value = text;
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.appendChild(ta);
    ta.select();
    try { document.execCommand("copy"); } catch (e) { /* ignore */ }
    ta.remove();
  }

  // --- wiring ---------------------------------------------------------------------------

  document.addEventListener("click", function (ev) {
    var close = ev.target.closest(".inspector-close");
    if (close) {
      close.closest(".inspector").remove();
      return;
    }
    var copy = ev.target.closest(".copy-text");
    if (copy) {
      ev.preventDefault();
      copyText(copy.dataset.text, copy);
      return;
    }
    var link = ev.target.closest(".copy-link, .copy-entry-link");
    if (link) {
      ev.preventDefault();
      var href = link.getAttribute("href") || link.dataset.href;
      copyText(new URL(href, location.href).href, link);
      return;
    }
    var go = ev.target.closest("a.goto");
    if (go) {
      ev.preventDefault();
      goTo(go.dataset.id);
      return;
    }
    var back = ev.target.closest(".tree-back-to-leaf");
    if (back) {
      ev.preventDefault();
      state.leaf = "";
      refresh();
      return;
    }
    var chev = ev.target.closest("#tree-panel .chev");
    if (chev) {
      ev.stopPropagation();
      toggleGroup(chev.closest(".tgroup"));
      return;
    }
    var toggle = ev.target.closest(".tgroup-toggle");
    if (toggle && toggle.closest("#tree-panel")) {
      toggleGroup(toggle.parentElement);
      return;
    }
    var row = ev.target.closest("#tree-panel .tn.node");
    if (row) {
      // The request first, then the selection: a clicked row is in view, so it needs no
      // scrolling (which would lay the whole page out before the request leaves).
      openEntry(row.dataset.id);
      select(row, { scroll: false });
    }
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.target.closest && ev.target.closest("#tree-panel .tree")) onKey(ev);
  });

  document.addEventListener("change", function (ev) {
    if (ev.target.id === "tree-filter") {
      state.filter = ev.target.value;
      refresh();
    }
  });

  var searchTimer = null;
  document.addEventListener("input", function (ev) {
    if (ev.target.id !== "tree-search") return;
    clearTimeout(searchTimer);
    var value = ev.target.value;
    searchTimer = setTimeout(function () {
      if (value.trim() === state.q) return;
      state.q = value.trim();
      refresh().then(function () {
        var s = document.getElementById("tree-search");
        if (s) { s.focus(); s.setSelectionRange(s.value.length, s.value.length); }
        var first = document.querySelector("#tree-panel .tn.match");
        if (first) first.scrollIntoView({ block: "center" });
      });
    }, 350);
  });

  document.addEventListener("htmx:afterSwap", function (ev) {
    var target = ev.detail && ev.detail.target;
    if (!target) return;
    if (target.id === "tree-panel") readState();
  });

  // A swapped-in lazy group (an unfolded run or branch): select its first row.
  document.addEventListener("htmx:load", function (ev) {
    var el = ev.target;
    if (el && el.classList && el.classList.contains("tgroup")) {
      var first = el.querySelector(".tn.node");
      if (first) select(first);
    }
  });

  // Server-side triggers (HX-Trigger) from the action forms. (Their detail never has a
  // "target" key: htmx would take it for the element to dispatch the event on.)
  document.addEventListener("piweb:tree-refresh", function (ev) {
    var d = ev.detail || {};
    state.leaf = "";
    if (d.entry) state.target = d.entry;
    scheduleRefresh(0);
  });

  document.addEventListener("piweb:prefill-input", function (ev) {
    var box = document.getElementById("chat-input");
    var text = (ev.detail && ev.detail.text) || "";
    if (box && box.value !== text) {
      box.value = text;
      box.dispatchEvent(new Event("input", { bubbles: true }));
    }
    if (box) box.focus();
  });

  // Another panel (the context chart in usage.js) asks to select a node.
  document.addEventListener("piweb:select-entry", function (ev) {
    if (ev.detail && ev.detail.id) goTo(ev.detail.id);
  });

  // Live updates from the session websocket (piweb.js).
  document.addEventListener("piweb:entry_appended", function () { scheduleRefresh(); });
  document.addEventListener("piweb:files_changed", function () { scheduleRefresh(); });
  document.addEventListener("piweb:leaf_moved", function () { scheduleRefresh(); });
  document.addEventListener("piweb:job_progress", function (ev) {
    var d = ev.detail || {};
    var box = document.getElementById("tree-job-status");
    if (box) {
      var phase = d.progress && d.progress.phase ? " (" + d.progress.phase + ")" : "";
      var text = (d.kind || "job").replace("_", " ") + ": " + d.status + phase;
      if (d.error) text += " — " + d.error;
      box.textContent = text;
      box.dataset.status = d.status || "";
    }
    document.querySelectorAll('.job-status[data-job="' + d.job_id + '"]').forEach(function (el) {
      el.textContent = d.status;
    });
    if (d.status === "done" || d.status === "failed" || d.status === "superseded") scheduleRefresh(100);
  });

  document.addEventListener("DOMContentLoaded", function () {
    readState();
    restoreSelection(false);
  });
})();
