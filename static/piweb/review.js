// Review area: comments follow the selected node, export links follow the leaf, and a
// share-link page says when the session changed under it. No build step.
(function () {
  "use strict";

  function panel() { return document.getElementById("rv-panel"); }

  function selectEntry(id) {
    var p = panel();
    if (!p || !id || p.dataset.reviewSelected === id) return;
    p.dataset.reviewSelected = id;
    var label = document.getElementById("rv-selected-id");
    if (label) label.textContent = id;
    var url = p.dataset.reviewCommentsUrl + "?entry=" + encodeURIComponent(id);
    if (window.htmx) window.htmx.ajax("GET", url, { target: "#review-comments", swap: "innerHTML" });
  }

  function setLeaf(leaf) {
    var p = panel();
    if (!p) return;
    p.dataset.reviewLeaf = leaf || "";
    document.querySelectorAll("#rv-panel a.rv-export").forEach(function (a) {
      var url = p.dataset.reviewExportUrl.replace("FMT", a.dataset.format);
      a.href = url + (leaf ? "?leaf=" + encodeURIComponent(leaf) : "");
    });
  }

  // We follow clicks on any node outside this panel that carries data-entry-id. A tree
  // row's comments follow once its entry is shown (below): the entry's request goes alone.
  document.addEventListener("click", function (ev) {
    if (!ev.target.closest) return;
    var el = ev.target.closest("[data-entry-id], .tn.node[data-id]");
    if (!el || (panel() && panel().contains(el))) return;
    if (el.closest(".rv-share-page")) return;
    if (el.matches(".tn.node[data-id]") && el.closest("#tree-panel") && document.getElementById("entry-pane")) return;
    selectEntry(el.getAttribute("data-entry-id") || el.getAttribute("data-id"));
  });
  document.addEventListener("htmx:afterSwap", function (ev) {
    var target = ev.detail && ev.detail.target;
    if (!target || target.id !== "entry-pane") return;
    var shown = target.querySelector("[data-entry]");
    if (shown) selectEntry(shown.getAttribute("data-entry"));
  });
  // …and follow ?target= when the page URL changes (HTMX push or back/forward).
  function fromLocation() {
    var params = new URLSearchParams(location.search);
    if (params.get("target")) selectEntry(params.get("target"));
    if (params.get("leaf")) setLeaf(params.get("leaf"));
  }
  window.addEventListener("popstate", fromLocation);
  document.addEventListener("htmx:pushedIntoHistory", fromLocation);
  document.addEventListener("htmx:replacedInHistory", fromLocation);

  // Keyboard selection in the tree loads the entry pane: follow the selected node then.
  document.addEventListener("htmx:afterSwap", function (ev) {
    if (!ev.target || ev.target.id !== "entry-pane") return;
    var row = document.querySelector("#tree-panel .tn.node.selected[data-id]");
    if (row) selectEntry(row.getAttribute("data-id"));
  });

  document.addEventListener("piweb:leaf_moved", function (ev) {
    if (ev.detail && "leaf" in ev.detail) setLeaf(ev.detail.leaf);
  });
  document.addEventListener("piweb:entry_appended", function (ev) {
    if (ev.detail && ev.detail.leaf) setLeaf(ev.detail.leaf);
  });

  // Share-link page: the page is rendered from the live session; tell the visitor when
  // it moved on since.
  function changed() {
    var note = document.querySelector(".rv-share-page .rv-changed");
    if (note) note.hidden = false;
  }
  document.addEventListener("piweb:entry_appended", changed);
  document.addEventListener("piweb:leaf_moved", changed);
  // The server closes a link visitor's socket with 4403 when the link is revoked/expired.
  document.addEventListener("piweb:ws-closed", function (ev) {
    var note = document.querySelector(".rv-share-page .rv-link-gone");
    if (note && ev.detail && ev.detail.code === 4403) note.hidden = false;
  });
})();
