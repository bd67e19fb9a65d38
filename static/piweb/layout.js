// The chat-first session page's layout: the tree panel and the details drawer open and
// close (buttons, Alt+T / Alt+D, the scrim on a phone); the drawer starts closed and opens
// by itself when a node or the inspector is shown in it; the context gauge opens the
// chart; the tree's edge resizes it. Wide windows remember the tree's state and width
// (localStorage); below 900 px both start closed and are overlays.
(function () {
  "use strict";
  var NARROW = "(max-width: 900px)";
  function page() { return document.querySelector(".session-page.chat-first"); }
  function narrow() { return window.matchMedia(NARROW).matches; }
  function remember(name, open) {
    if (narrow()) return;
    try { localStorage.setItem("piweb.layout." + name, open ? "open" : "closed"); } catch (e) { /* private mode */ }
  }
  function remembered(name) {
    try { return localStorage.getItem("piweb.layout." + name); } catch (e) { return null; }
  }
  function set(name, open, keep) {
    var p = page();
    if (!p) return;
    p.classList.toggle(name + "-closed", !open);
    var button = document.getElementById("toggle-" + name);
    if (button) button.setAttribute("aria-pressed", open ? "true" : "false");
    if (open && narrow()) {
      // one overlay at a time on a phone
      var other = name === "tree" ? "drawer" : "tree";
      p.classList.add(other + "-closed");
      var ob = document.getElementById("toggle-" + other);
      if (ob) ob.setAttribute("aria-pressed", "false");
    }
    if (keep !== false) remember(name, open);
  }
  function isOpen(name) {
    var p = page();
    return !!p && !p.classList.contains(name + "-closed");
  }
  function toggle(name) { set(name, !isOpen(name)); }

  function toggleChart(force) {
    var panel = document.getElementById("context-chart-panel");
    var gauge = document.getElementById("context-gauge");
    if (!panel) return;
    var open = force === undefined ? panel.hidden : force;
    panel.hidden = !open;
    if (gauge) gauge.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) window.piweb.dispatch("open-chart");
  }

  document.addEventListener("click", function (ev) {
    var t = ev.target;
    if (!t.closest) return;
    var opener = t.closest("[data-open-dialog]");
    if (opener) {
      var dialog = document.getElementById(opener.dataset.openDialog);
      if (dialog && dialog.showModal) dialog.showModal();
      return;
    }
    if (t.closest("[data-close-dialog]")) {
      var d = t.closest("dialog");
      if (d) d.close();
      return;
    }
    if (t.closest("#toggle-tree")) toggle("tree");
    else if (t.closest("#toggle-drawer")) toggle("drawer");
    else if (t.closest("#drawer-close")) set("drawer", false);
    else if (t.closest("#overlay-scrim")) { set("tree", false, false); set("drawer", false, false); }
    else if (t.closest("#context-gauge")) toggleChart();
    else if (!t.closest("#context-chart-panel") && !t.closest("#context-gauge")) {
      var panel = document.getElementById("context-chart-panel");
      if (panel && !panel.hidden) toggleChart(false);
    }
    // a node picked in the tree overlay: show it (the drawer), out of the way of the chat
    if (narrow() && t.closest("#tree-panel .tn.node .preview")) set("tree", false, false);
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.altKey && !ev.ctrlKey && !ev.metaKey) {
      if (ev.key === "t" || ev.key === "T") { toggle("tree"); ev.preventDefault(); }
      else if (ev.key === "d" || ev.key === "D") { toggle("drawer"); ev.preventDefault(); }
    } else if (ev.key === "Escape") {
      var panel = document.getElementById("context-chart-panel");
      var typing = ev.target.closest && ev.target.closest("input, textarea, select, dialog, details[open]");
      if (panel && !panel.hidden) toggleChart(false);
      else if (!typing && isOpen("drawer") && !document.getElementById("pick-notice")) set("drawer", false, false);
    }
  });
  // The entry pane or the inspector got content: open the drawer.
  document.addEventListener("htmx:afterSwap", function (ev) {
    var id = ev.detail && ev.detail.target && ev.detail.target.id;
    if ((id === "entry-pane" || id === "inspector-pane") && !isOpen("drawer")) set("drawer", true, false);
    if (id === "inspector-pane") {
      var pane = document.getElementById("inspector-pane");
      if (pane && pane.firstElementChild) pane.scrollIntoView({ block: "start" });
    }
  });
  // The live header keeps the usage breakdown open across its refreshes.
  var usageOpen = false;
  document.addEventListener("htmx:beforeSwap", function (ev) {
    var t = ev.detail && ev.detail.target;
    if (t && t.id === "session-stats") {
      var head = document.getElementById("usage-head");
      usageOpen = !!(head && head.open);
    }
  });
  document.addEventListener("htmx:afterSettle", function (ev) {
    var t = ev.detail && ev.detail.elt;
    var head = document.getElementById("usage-head");
    if (usageOpen && head && t && t.id === "session-stats") head.open = true;
    var chart = document.getElementById("context-chart-panel");
    var gauge = document.getElementById("context-gauge");
    if (gauge && chart) gauge.setAttribute("aria-expanded", chart.hidden ? "false" : "true");
  });

  document.addEventListener("DOMContentLoaded", function () {
    var p = page();
    if (!p) return;
    if (narrow()) {
      set("tree", false, false);
      set("drawer", !!document.querySelector("#entry-pane [data-entry]"), false);
      return;
    }
    set("tree", remembered("tree") !== "closed", false);
    // The drawer is closed until an action opens it (a node asked for in the address).
    set("drawer", !!document.querySelector("#entry-pane [data-entry]"), false);
    var width = Number(remembered("tree-width"));
    if (width) setTreeWidth(width, false);
  });

  // The tree's width: drag its edge (or focus it and press ←/→); remembered per browser.
  var MIN_TREE = 220, MAX_TREE = 640;
  function setTreeWidth(px, keep) {
    var grid = document.getElementById("session-grid");
    var resizer = document.getElementById("tree-resizer");
    if (!grid) return;
    px = Math.round(Math.max(MIN_TREE, Math.min(MAX_TREE, px, window.innerWidth * 0.6)));
    grid.style.setProperty("--tree-w", px + "px");
    if (resizer) resizer.setAttribute("aria-valuenow", String(px));
    if (keep !== false) {
      try { localStorage.setItem("piweb.layout.tree-width", String(px)); } catch (e) { /* private mode */ }
    }
  }
  function treeWidth() {
    var tree = document.getElementById("tree-panel");
    return tree ? tree.getBoundingClientRect().width : 320;
  }
  document.addEventListener("pointerdown", function (ev) {
    var resizer = ev.target.closest && ev.target.closest("#tree-resizer");
    if (!resizer) return;
    ev.preventDefault();
    var startX = ev.clientX, startW = treeWidth();
    document.body.classList.add("resizing-tree");
    function move(e) { setTreeWidth(startW + e.clientX - startX, false); }
    function up() {
      document.body.classList.remove("resizing-tree");
      document.removeEventListener("pointermove", move);
      document.removeEventListener("pointerup", up);
      setTreeWidth(treeWidth());
    }
    document.addEventListener("pointermove", move);
    document.addEventListener("pointerup", up);
  });
  document.addEventListener("keydown", function (ev) {
    if (!ev.target.closest || !ev.target.closest("#tree-resizer")) return;
    if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
      setTreeWidth(treeWidth() + (ev.key === "ArrowRight" ? 16 : -16));
      ev.preventDefault();
    }
  });
})();
