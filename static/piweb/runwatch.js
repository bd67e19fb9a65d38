// While the agent works: Esc stops the run (unless Esc is closing something else), and
// when a run ends while the tab is hidden the tab title says so and, with the user's
// permission (asked on their first message), a browser notification too.
(function () {
  "use strict";
  var baseTitle = null;
  function chat() { return document.getElementById("chat"); }
  function running() { var c = chat(); return !!c && c.dataset.running === "true"; }
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Escape" || ev.defaultPrevented || !running()) return;
    var chart = document.getElementById("context-chart-panel");
    if (chart && !chart.hidden) return;
    if (document.body.classList.contains("picking-compare") || document.querySelector("dialog[open]")) return;
    var stop = document.getElementById("chat-stop");
    if (stop) stop.click();
  });
  document.addEventListener("submit", function (ev) {
    if (!ev.target || ev.target.id !== "chat-form") return;
    if (window.Notification && Notification.permission === "default") {
      try { Notification.requestPermission(); } catch (e) { /* old browsers */ }
    }
  }, true);
  document.addEventListener("piweb:run_end", function (ev) {
    if (!document.hidden) return;
    var status = (ev.detail && ev.detail.status) || "done";
    var ok = status === "done";
    if (baseTitle === null) baseTitle = document.title;
    document.title = (ok ? "✓ finished · " : "✗ " + status + " · ") + baseTitle;
    if (window.Notification && Notification.permission === "granted") {
      try {
        new Notification(ok ? "pi finished" : "pi run " + status, {
          body: baseTitle.replace(/ · piweb$/, ""),
          tag: "piweb-run",
        });
      } catch (e) { /* notifications may be unavailable */ }
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && baseTitle !== null) {
      document.title = baseTitle;
      baseTitle = null;
    }
  });
})();
