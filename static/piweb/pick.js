// "Compare with…": the selected node is A; the next node clicked in the tree is B, and
// the compare page opens for the two. A notice says what to do; Esc or the notice's
// Cancel leaves the mode. Capture phase, so the tree does not open the clicked node.
(function () {
  "use strict";
  var picking = null;
  function notice() { return document.getElementById("pick-notice"); }
  function stop() {
    picking = null;
    document.body.classList.remove("picking-compare");
    var n = notice();
    if (n) n.remove();
  }
  function start(button) {
    picking = { from: button.dataset.compareFrom, url: button.dataset.compareUrl };
    document.body.classList.add("picking-compare");
    var n = notice() || document.createElement("div");
    n.id = "pick-notice";
    n.className = "pick-notice";
    n.setAttribute("role", "status");
    n.textContent = "Click the node to compare " + picking.from + " with (Esc cancels). ";
    var cancel = document.createElement("button");
    cancel.type = "button";
    cancel.className = "small";
    cancel.textContent = "Cancel";
    cancel.dataset.pickCancel = "1";
    n.appendChild(cancel);
    document.body.appendChild(n);
    // on a phone the tree is an overlay: show it
    var tree = document.getElementById("tree-panel");
    var page = document.querySelector(".session-page.chat-first");
    if (page && tree && tree.offsetParent === null) {
      var toggle = document.getElementById("toggle-tree");
      if (toggle) toggle.click();
    }
  }
  document.addEventListener(
    "click",
    function (ev) {
      var t = ev.target;
      if (!t.closest) return;
      var button = t.closest("[data-compare-from]");
      if (button) {
        ev.preventDefault();
        start(button);
        return;
      }
      if (!picking) return;
      if (t.closest("[data-pick-cancel]")) {
        ev.preventDefault();
        stop();
        return;
      }
      var row = t.closest("#tree-panel .tn.node");
      if (!row || !row.dataset.id) return;
      ev.preventDefault();
      ev.stopPropagation();
      var url = picking.url + "?a=" + encodeURIComponent(picking.from) + "&b=" + encodeURIComponent(row.dataset.id);
      stop();
      window.location.assign(url);
    },
    true
  );
  document.addEventListener("keydown", function (ev) {
    if (picking && ev.key === "Escape") stop();
  });
})();
