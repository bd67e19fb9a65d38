// Jobs panel: live status of compactions and branch summaries. The server publishes
// `job_progress` on the session websocket (re-dispatched by piweb.js as
// `piweb:job_progress`); we update the row at once, and the list re-renders itself from
// the server (its `hx-trigger`: after job_progress, a job queued by another panel, or a
// reconnect). While a job is active the list also polls every 2 s (htmx), so a page
// without a websocket still sees queued -> running -> done / failed.
(function () {
  "use strict";
  var PHASES = {
    queued: "waiting for a worker",
    preparing: "preparing",
    summarizing: "summarizing",
    retrying: "provider error, retrying",
    waiting_for_run: "waiting for the agent run to finish",
    requeued: "worker stopped; queued again",
    done: "done",
    superseded: "superseded",
    failed: "failed",
  };

  function list() {
    return document.getElementById("jobs-list");
  }

  function update(data) {
    var el = list();
    if (!el || !data || !data.job_id) return;
    var row = el.querySelector('[data-job-id="' + data.job_id + '"]');
    if (!row) return;
    row.dataset.jobStatus = data.status;
    row.className = "job job-" + data.status;
    var status = row.querySelector(".job-status");
    if (status) status.textContent = data.status;
    var progress = row.querySelector(".job-progress");
    var phase = (data.progress && data.progress.phase) || data.status;
    if (progress) {
      var label = (data.progress && data.progress.note) || PHASES[phase] || phase;
      progress.textContent = label === data.status ? "" : label;
    }
    if (data.error) {
      var err = row.querySelector(".job-error");
      if (!err) {
        err = document.createElement("span");
        err.className = "job-error";
        err.setAttribute("role", "alert");
        row.appendChild(err);
      }
      err.textContent = data.error;
    }
    if (data.status === "queued" || data.status === "running") el.dataset.active = "true";
  }

  document.addEventListener("piweb:job_progress", function (ev) {
    update(ev.detail);
  });
})();
