// piweb's small client, no build step. One websocket per session page (and one per
// sessions list): every event the server publishes on its group is re-dispatched on
// <body> as a DOM event named `piweb:<event>` (detail = data). Panels refresh themselves
// declaratively (`hx-trigger="piweb:<event> from:body"`); the names are the server's list
// (`core/event_names.py`, in the page as the JSON `#piweb-events`), and a name outside it
// is not dispatched.
(function () {
  "use strict";
  var names = null;
  function eventNames() {
    if (names === null) {
      var data = document.getElementById("piweb-events");
      names = data ? JSON.parse(data.textContent) : { socket: [], all: [] };
    }
    return names;
  }
  // One way to raise a page event: on <body>, bubbling to document.
  function dispatch(name, detail) {
    if (eventNames().all.indexOf(name) < 0) {
      if (window.console) console.warn("piweb: unknown event " + name);
      return;
    }
    document.body.dispatchEvent(new CustomEvent("piweb:" + name, { bubbles: true, detail: detail }));
  }
  function connect(sessionId, shareToken, stamp) {
    var path = "/ws/sessions/" + encodeURIComponent(sessionId) + "/";
    if (shareToken) path += "?share=" + encodeURIComponent(shareToken); // read-only link visitor
    return openSocket(path, stamp);
  }
  // `ws-open` is the catch-up: panels ask again for what they show, in case events were
  // sent before the socket was open. A page that carries the stamp it was drawn at
  // (selectors/panels/page.page_stamp) skips it on its first open when the hello's stamp
  // is the same (nothing changed in between); a reopened socket always catches up.
  function openSocket(path, stamp) {
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    var url = proto + location.host + path;
    var delay = 500;
    var socket;
    var drawnAt = stamp || null;
    function open() {
      socket = new WebSocket(url);
      socket.onopen = function () {
        delay = 500;
        document.body.dataset.ws = "open";
        if (!drawnAt) dispatch("ws-open");
      };
      socket.onmessage = function (msg) {
        var payload = JSON.parse(msg.data);
        if (payload.event === "hello" && drawnAt) {
          var same = payload.data && payload.data.stamp === drawnAt;
          drawnAt = null;
          document.body.dataset.caughtUp = same ? "same" : "changed";
          if (!same) dispatch("ws-open");
        }
        if (eventNames().socket.indexOf(payload.event) >= 0) dispatch(payload.event, payload.data);
      };
      socket.onclose = function (ev) {
        document.body.dataset.ws = "closed";
        drawnAt = null; // closed before its hello: the next open catches up
        dispatch("ws-closed", { code: ev.code });
        if (ev.code >= 4400 && ev.code < 4500) return; // refused: no rights, do not retry
        setTimeout(open, delay);
        delay = Math.min(delay * 2, 10000);
      };
    }
    open();
    return {
      send: function (obj) {
        if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(obj));
      },
    };
  }
  // The CSRF token for requests made outside htmx: the cookie, else the one base.html puts
  // in htmx's headers (the cookie may be HttpOnly).
  function csrfToken() {
    var m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (m) return decodeURIComponent(m[1]);
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }
  // The one request helper, for what is not an htmx form or button (a JSON read, say): the
  // page's own origin, and the CSRF header on anything but a GET. Forms and buttons post
  // through htmx (hx-post), with the header base.html gives htmx.
  function request(url, options) {
    options = options || {};
    var method = (options.method || "GET").toUpperCase();
    var init = { method: method, credentials: "same-origin", headers: {} };
    if (method !== "GET") {
      init.headers["X-CSRFToken"] = csrfToken();
      if (options.data) init.body = options.data instanceof FormData ? options.data : new URLSearchParams(options.data);
    }
    return fetch(url, init);
  }
  window.piweb = window.piweb || {};
  window.piweb.csrfToken = csrfToken;
  window.piweb.request = request;
  window.piweb.connect = connect;
  window.piweb.dispatch = dispatch;
  // Read-only link boxes select all their text when focused or clicked, ready to copy.
  function selectAll(ev) {
    if (ev.target.matches && ev.target.matches("input[data-select-all]")) ev.target.select();
  }
  // Copy buttons: `data-copy-from` names the input whose value they copy.
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("[data-copy-from]");
    if (!button) return;
    var input = document.getElementById(button.dataset.copyFrom);
    if (!input) return;
    var done = function () {
      button.dataset.copied = "true";
      button.textContent = "Copied";
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(done, function () {
        input.select();
        document.execCommand("copy");
        done();
      });
    } else {
      input.select();
      document.execCommand("copy");
      done();
    }
  });
  document.addEventListener("focusin", selectAll);
  document.addEventListener("click", selectAll);
  // A button that stands for a control elsewhere on the page (the sessions list's first
  // run): `data-pick-files="id"` opens that file input's picker, `data-open-details="id"`
  // opens that card and puts the cursor in its first field.
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("[data-pick-files], [data-open-details]");
    if (!button) return;
    var target = document.getElementById(button.dataset.pickFiles || button.dataset.openDetails);
    if (!target) return;
    if (button.dataset.pickFiles) {
      target.click();
      return;
    }
    target.open = true;
    target.scrollIntoView({ block: "nearest" });
    var field = target.querySelector("input:not([type=hidden]), select, textarea");
    if (field) field.focus();
  });
  // The sessions list asks for its rows again (htmx, `piweb:sessions-refresh`) a second
  // after a change, so a burst of changes costs one request and the last one is never
  // missed; once the socket is open, for what changed before (while the page loaded or
  // the socket was down); and, for a tab in the background, only once it is shown again.
  function followSessionsList() {
    var pending = null;
    var missed = false;
    function refreshSoon() {
      if (pending) return;
      pending = setTimeout(function () {
        pending = null;
        // What the last poll did, on <body data-sessions-refresh>: "asked" or "missed"
        // (hidden). Tests wait for it instead of for a clock.
        document.body.dataset.sessionsRefresh = document.hidden ? "missed" : "asked";
        if (document.hidden) {
          missed = true;
          return;
        }
        dispatch("sessions-refresh");
      }, 1000);
    }
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && missed) {
        missed = false;
        refreshSoon();
      }
    });
    document.addEventListener("piweb:sessions_changed", refreshSoon);
    document.addEventListener("piweb:ws-open", refreshSoon);
    window.piweb.socket = openSocket("/ws/sessions/");
  }
  document.addEventListener("DOMContentLoaded", function () {
    var el = document.querySelector("[data-piweb-session]");
    if (el) window.piweb.socket = connect(el.dataset.piwebSession, el.dataset.piwebShare, el.dataset.piwebStamp);
    else if (document.querySelector("[data-piweb-sessions-list]")) followSessionsList();
  });
})();
// The import form: a file over the server's limit is refused here, before it is sent
// (the server would refuse it too, at once, but a browser still sending the body may
// show only a dropped connection).
(function () {
  "use strict";
  document.addEventListener(
    "submit",
    function (ev) {
      var form = ev.target;
      if (!form || form.id !== "import-form") return;
      var input = form.querySelector("input[type=file][data-max-bytes]");
      var file = input && input.files && input.files[0];
      var limit = input ? Number(input.dataset.maxBytes) : 0;
      if (!file || !limit || file.size <= limit) return;
      ev.preventDefault();
      ev.stopImmediatePropagation();
      var box = document.getElementById("import-result");
      if (box) {
        var p = document.createElement("p");
        p.className = "error";
        p.textContent =
          "Import failed: " + file.name + " is larger than the import limit (" +
          input.dataset.maxLabel + "): not sent.";
        box.replaceChildren(p);
      }
    },
    true
  );
})();
// The theme menu (parts/_theme_menu.html): the page changes at once; the form stores the
// choice on the user (htmx post), so the server renders <html data-theme> on the next load.
// Menus on <details class="menu"> close on a click elsewhere and on Escape.
(function () {
  "use strict";
  document.addEventListener("click", function (ev) {
    var choice = ev.target.closest && ev.target.closest(".theme-menu button[name=theme]");
    if (choice) {
      document.documentElement.dataset.theme = choice.value;
      choice.closest("form").querySelectorAll("button[name=theme]").forEach(function (b) {
        b.setAttribute("aria-pressed", b === choice ? "true" : "false");
      });
      var menu = choice.closest("details");
      if (menu) {
        menu.open = false;
        var summary = menu.querySelector("summary");
        var glyph = choice.querySelector("svg");
        if (summary && glyph) summary.replaceChildren(glyph.cloneNode(true));
        if (summary) summary.setAttribute("aria-label", "Theme: " + choice.value);
      }
    }
    var close = ev.target.closest && ev.target.closest(".toast-close");
    if (close) dismiss(close.closest(".toast"));
    document.querySelectorAll("details.menu[open]").forEach(function (menu) {
      if (!menu.contains(ev.target)) menu.open = false;
    });
  });
  // Toasts (base.html's flash messages): a confirmation goes after a few seconds unless
  // the pointer is on it; an error stays until closed.
  function dismiss(toast) {
    if (!toast || toast.classList.contains("leaving")) return;
    toast.classList.add("leaving");
    setTimeout(function () { toast.remove(); }, 200);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".toast:not(.error)").forEach(function (toast) {
      var timer = null;
      function later() { timer = setTimeout(function () { dismiss(toast); }, 8000); }
      toast.addEventListener("mouseenter", function () { clearTimeout(timer); });
      toast.addEventListener("mouseleave", later);
      later();
    });
  });
  // A copy button: <button class="copy-button" data-copy-from="#field-id"> copies that
  // field's value (the clipboard API, else a selection and execCommand on plain http) and
  // says "Copied" for a moment, in its label and to a screen reader (aria-live).
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("button.copy-button[data-copy-from]");
    if (!button) return;
    var field = document.querySelector(button.dataset.copyFrom);
    if (!field) return;
    ev.preventDefault();
    function done() {
      var label = button.querySelector(".copy-label");
      if (label) {
        if (!button.dataset.label) button.dataset.label = label.textContent;
        label.textContent = "Copied";
      }
      button.classList.add("copied");
      clearTimeout(button._copyTimer);
      button._copyTimer = setTimeout(function () {
        button.classList.remove("copied");
        if (label) label.textContent = button.dataset.label;
      }, 2000);
    }
    function fallback() {
      field.focus();
      field.select();
      try { document.execCommand("copy"); } catch (e) { /* the field stays selected */ }
      done();
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, fallback);
    } else {
      fallback();
    }
  });
  // hx-confirm: the question in the page's <dialog> (base.html), not window.confirm.
  document.addEventListener("htmx:confirm", function (ev) {
    var dialog = document.getElementById("confirm-dialog");
    if (!ev.detail.question || !dialog || !dialog.showModal) return;
    ev.preventDefault();
    document.getElementById("confirm-dialog-text").textContent = ev.detail.question;
    dialog.returnValue = "";
    dialog.addEventListener("close", function answered() {
      dialog.removeEventListener("close", answered);
      if (dialog.returnValue === "ok") ev.detail.issueRequest(true);
    });
    dialog.showModal();
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Escape") return;
    document.querySelectorAll("details.menu[open]").forEach(function (menu) {
      menu.open = false;
      var summary = menu.querySelector("summary");
      if (summary) summary.focus();
    });
  });
})();
