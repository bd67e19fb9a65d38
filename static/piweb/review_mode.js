// Reviewer mode's keys (templates/sessions_app/review_queues/review.html): 1-9 press the
// nth value of the score being given, j and k move between items, s skips, e opens the
// session. Typing in a field is left alone.
(function () {
  "use strict";
  function typing(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }
  document.addEventListener("keydown", function (event) {
    const root = document.querySelector("[data-review-mode]");
    if (!root || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
      return;
    }
    const key = event.key;
    let done = true;
    if (/^[1-9]$/.test(key)) {
      const form = root.querySelector(".review-config[data-active]");
      const button = form && form.querySelector(`button[data-key="${key}"]`);
      if (button) button.click();
    } else if (key === "j" && root.dataset.next) {
      window.location.assign(root.dataset.next);
    } else if (key === "k" && root.dataset.prev) {
      window.location.assign(root.dataset.prev);
    } else if (key === "s") {
      const skip = root.querySelector(".review-skip");
      if (skip) skip.requestSubmit();
    } else if (key === "e" && root.dataset.session) {
      window.location.assign(root.dataset.session);
    } else {
      done = false;
    }
    if (done) event.preventDefault();
  });
})();
