// The chat box: slash commands with completion, and images to send with a message.
// The command list comes from the server (#composer-config, rendered from
// selectors/panels/composer.py); the user's prompt templates and /skill: commands (marked
// "sends") are sent as typed, and the server expands them as pi does.
// Commands hook into the box's own htmx request (htmx:configRequest, on the form, so before
// chat.js's listener on the document, whatever the scripts' order): a command that is a
// request (/model, /thinking, /compact, /name, /fork) sends the box's post to that
// action's endpoint with its own fields, answered in #chat-notice like any other; one done
// in the page (/tree, /export, /share, /copy, /new) cancels the post. Images ride on the
// same post (multipart).
(function () {
  "use strict";
  var NAME = /^\/([A-Za-z][\w-]*)(?:\s([\s\S]*))?$/;
  var IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
  var MAX_SIDE = 2000; // pi scales larger images down to fit 2000x2000 before sending

  var chat, box, input, form, popup, tray, notice, config;
  var commands = {};
  var sent = {}; // templates and skills: sent as typed, expanded by the server as pi does
  var items = [];
  var active = 0;
  var images = [];
  var confirmedUnknown = null;

  function say(text, level) {
    var p = document.createElement("p");
    p.className = "notice " + (level || "info");
    p.textContent = text;
    notice.innerHTML = "";
    notice.appendChild(p);
  }

  function leaf() {
    var marker = document.getElementById("chat-leaf");
    return (marker && marker.dataset.leaf) || "";
  }

  function withEntry(url, id) { return url.replace("__entry__", encodeURIComponent(id)); }

  // --- what completes the arguments ------------------------------------------------

  function modelSelect() { return document.getElementById("chat-model-select"); }

  function currentModelOption() {
    var select = modelSelect();
    var label = document.getElementById("chat-model");
    if (!select || !label) return null;
    for (var i = 0; i < select.options.length; i++) {
      if (select.options[i].value && select.options[i].value === label.textContent.trim()) {
        return select.options[i];
      }
    }
    return null;
  }

  function modelChoices() {
    var select = modelSelect();
    if (!select) return [];
    return Array.prototype.filter.call(select.options, function (o) { return !!o.value; })
      .map(function (o) {
        return { value: o.value, hint: o.textContent + (o.dataset.images === "1" ? " \u00b7 takes images" : "") };
      });
  }

  function thinkingLevels() {
    var option = currentModelOption();
    if (option && option.dataset.levels) return option.dataset.levels.split(",");
    var select = document.getElementById("chat-thinking-select");
    var form_ = document.getElementById("chat-thinking-form");
    if (!select || !form_ || form_.hidden) return ["off"];
    return Array.prototype.map.call(select.options, function (o) { return o.value; });
  }

  function argumentChoices(command) {
    if (command.completes === "models") return modelChoices();
    if (command.completes === "thinking") {
      return thinkingLevels().map(function (l) { return { value: l, hint: "" }; });
    }
    if (command.completes === "formats") {
      return config.formats.map(function (f) { return { value: f, hint: "" }; });
    }
    return [];
  }

  // --- the completion list ---------------------------------------------------------

  function suggestions(text) {
    var m = text.match(/^\/(\S*)$/);
    if (m) {
      var typed = m[1].toLowerCase();
      return config.commands.filter(function (c) { return c.name.toLowerCase().indexOf(typed) === 0; })
        .map(function (c) {
          var hint = (c.argument ? c.argument + " \u00b7 " : "") + c.description;
          if (c.source) hint += " \u00b7 " + c.source;
          return { label: "/" + c.name, hint: hint,
            text: "/" + c.name + (c.argument || c.sends ? " " : ""), runs: !c.argument && !c.sends };
        });
    }
    m = text.match(/^\/([\w-]+) (\S*)$/);
    if (!m || !commands[m[1]]) return [];
    var command = commands[m[1]];
    var typedArg = m[2].toLowerCase();
    return argumentChoices(command).filter(function (choice) {
      return choice.value.toLowerCase().indexOf(typedArg) !== -1;
    }).map(function (choice) {
      return { label: choice.value, hint: choice.hint === choice.value ? "" : choice.hint,
        text: "/" + command.name + " " + choice.value, runs: true };
    });
  }

  function closePopup() {
    items = [];
    popup.hidden = true;
    popup.innerHTML = "";
    input.removeAttribute("aria-activedescendant");
  }

  function renderPopup() {
    popup.innerHTML = "";
    items.forEach(function (item, i) {
      var li = document.createElement("li");
      li.id = "composer-option-" + i;
      li.setAttribute("role", "option");
      li.className = "composer-option" + (i === active ? " active" : "");
      li.setAttribute("aria-selected", i === active ? "true" : "false");
      li.dataset.index = String(i);
      var label = document.createElement("code");
      label.textContent = item.label;
      li.appendChild(label);
      if (item.hint) {
        var hint = document.createElement("span");
        hint.className = "hint";
        hint.textContent = " " + item.hint;
        li.appendChild(hint);
      }
      popup.appendChild(li);
    });
    popup.hidden = items.length === 0;
    if (items.length) {
      input.setAttribute("aria-activedescendant", "composer-option-" + active);
      var current = popup.children[active];
      if (current && current.scrollIntoView) current.scrollIntoView({ block: "nearest" });
    }
  }

  function updatePopup() {
    items = suggestions(input.value);
    active = 0;
    renderPopup();
  }

  function accept(index, run) {
    var item = items[index];
    if (!item) return;
    input.value = item.text;
    input.focus();
    input.setSelectionRange(item.text.length, item.text.length);
    closePopup();
    if (run && item.runs) form.requestSubmit();
    else updatePopup();
  }

  // --- the commands ------------------------------------------------------------------

  // Each command returns the request it makes ({path, fields}), or nothing when it is
  // done in the page (or refused, with a notice).
  var run = {
    model: function (arg) {
      var known = modelChoices().some(function (c) { return c.value === arg; });
      if (!modelSelect()) return say("There are no models to choose from: add a key on the Models page.", "error");
      if (!known) return say("No model " + arg + " among yours: type /model and pick one from the list.", "error");
      return { path: box.dataset.modelUrl, fields: { profile: arg } }; // as the picker posts
    },
    thinking: function (arg) {
      var levels = thinkingLevels();
      if (levels.indexOf(arg) === -1 || !document.getElementById("chat-thinking-form")) {
        return say("Thinking level " + arg + " is not one this model takes (" + levels.join(", ") + ").", "error");
      }
      return { path: box.dataset.thinkingUrl, fields: { level: arg } };
    },
    compact: function (arg) {
      return { path: box.dataset.compactUrl, fields: { focus: arg } };
    },
    name: function (arg) {
      return { path: box.dataset.renameUrl, fields: { name: arg } };
    },
    fork: function () {
      var at = leaf();
      if (!at) return say("Nothing to fork yet: the session has no entries.", "error");
      // answered with HX-Redirect to the copy, which htmx follows
      return { path: withEntry(box.dataset.forkUrl, at), fields: { scope: "path" } };
    },
    tree: function () {
      var page = document.querySelector(".session-page");
      if (page && page.classList.contains("tree-closed")) {
        var toggle = document.getElementById("toggle-tree");
        if (toggle) toggle.click();
      }
      var tree = document.querySelector("#tree-panel .tree");
      if (!tree) return say("The tree is not on this page.", "error");
      tree.focus();
      var selected = tree.querySelector(".tn.selected, .tn.current");
      if (selected) selected.scrollIntoView({ block: "center" });
    },
    export: function (arg) {
      var format = (arg || "html").toLowerCase();
      if (config.formats.indexOf(format) === -1) {
        return say("Unknown export format " + arg + ": use " + config.formats.join(", ") + ".", "error");
      }
      var url = box.dataset.exportUrl.replace("__format__", format);
      if (leaf() && format !== "jsonl") url += "?leaf=" + encodeURIComponent(leaf());
      var link = document.createElement("a");
      link.href = url;
      link.download = "";
      document.body.appendChild(link);
      link.click();
      link.remove();
      say("Exporting this branch as " + format + "\u2026", "ok");
    },
    share: function () {
      var url = box.dataset.shareUrl + (leaf() ? "?leaf=" + encodeURIComponent(leaf()) : "");
      window.location.assign(url);
    },
    copy: function () {
      var answers = Array.prototype.slice.call(
        document.querySelectorAll("#chat-transcript .chat-msg.r-assistant[data-entry-id]")).reverse();
      function next(i) {
        if (i >= answers.length) return Promise.resolve(say("No answer to copy yet.", "error"));
        return window.piweb.request(withEntry(box.dataset.rawUrl, answers[i].dataset.entryId))
          .then(function (r) { return r.ok ? r.json() : null; })
          .then(function (entry) {
            var content = (entry && entry.message && entry.message.content) || [];
            var text = (Array.isArray(content) ? content : [])
              .filter(function (b) { return b && b.type === "text"; })
              .map(function (b) { return b.text || ""; }).join("").trim();
            if (!text) return next(i + 1);
            return writeClipboard(text).then(function () {
              say("Copied the last answer (" + text.length + " characters).", "ok");
            }, function () {
              say("The browser did not allow copying to the clipboard.", "error");
            });
          });
      }
      return next(0);
    },
    new: function () {
      if (!box.dataset.newCwd) return say("This session has no workspace to start from: start one from the sessions list.", "error");
      var f = document.createElement("form");
      f.method = "post";
      f.action = box.dataset.newUrl;
      [["csrfmiddlewaretoken", window.piweb.csrfToken()], ["cwd", box.dataset.newCwd]].forEach(function (pair) {
        var field = document.createElement("input");
        field.type = "hidden";
        field.name = pair[0];
        field.value = pair[1];
        f.appendChild(field);
      });
      document.body.appendChild(f);
      f.submit();
    },
  };

  function writeClipboard(text) {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      return navigator.clipboard.writeText(text).catch(function () { return copyBySelection(text); });
    }
    return copyBySelection(text);
  }

  function copyBySelection(text) {
    var area = document.createElement("textarea");
    area.value = text;
    document.body.appendChild(area);
    area.select();
    var done = document.execCommand("copy");
    area.remove();
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  // A command (htmx:configRequest of the box's send): its own request in place of the
  // message, or none. Anything else goes on as a message.
  function handleCommand(ev) {
    var d = ev.detail;
    var text = (d.parameters.text || "").trim();
    var word = text.match(/^\/(\S+)/);
    if (word && sent[word[1]]) return false; // the server expands it, as pi does
    var m = text.match(NAME);
    if (!m) return false;
    var command = commands[m[1].toLowerCase()];
    var arg = (m[2] || "").trim();
    if (!command) {
      if (confirmedUnknown === text) return false; // sent as text, as pi sends it
      confirmedUnknown = text;
      ev.preventDefault();
      say("/" + m[1] + " is not a command (type / for the list). Press Enter again to send it to the model as text, as pi does.", "error");
      return true;
    }
    if (command.argument_required && !arg) {
      ev.preventDefault();
      say("/" + command.name + " needs " + command.argument + ".", "error");
      return true;
    }
    input.value = "";
    closePopup();
    var made = run[command.name](arg);
    if (!made || !made.path) {
      ev.preventDefault();
      return true;
    }
    d.path = made.path;
    Array.from(d.formData.keys()).forEach(function (key) { d.formData.delete(key); });
    Object.keys(made.fields).forEach(function (key) { d.formData.set(key, made.fields[key]); });
    return true;
  }

  function stop(ev) {
    ev.preventDefault();
    ev.stopImmediatePropagation();
  }

  // --- images --------------------------------------------------------------------------

  function imagesAllowed() {
    var option = currentModelOption();
    if (option) return option.dataset.images === "1";
    return !!config.images.allowed;
  }

  function imagesReason() {
    var option = currentModelOption();
    if (option && option.dataset.images !== "1") return option.value + " does not take images.";
    return config.images.reason || "This model does not take images.";
  }

  function syncAttach() {
    var button = document.getElementById("composer-attach");
    if (!button) return;
    var allowed = imagesAllowed();
    button.disabled = !allowed;
    button.title = allowed ? "Attach images (or paste them, or drop them on the box)" : imagesReason();
  }

  function renderTray() {
    tray.innerHTML = "";
    images.forEach(function (image, i) {
      var figure = document.createElement("figure");
      figure.className = "composer-thumb";
      var img = document.createElement("img");
      img.src = image.url;
      img.alt = image.name;
      var remove = document.createElement("button");
      remove.type = "button";
      remove.className = "small composer-remove";
      remove.dataset.index = String(i);
      remove.setAttribute("aria-label", "Remove " + image.name);
      remove.textContent = "\u00d7";
      figure.appendChild(img);
      figure.appendChild(remove);
      tray.appendChild(figure);
    });
    tray.hidden = images.length === 0;
  }

  function readAsDataUrl(blob) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () { resolve(reader.result); };
      reader.onerror = reject;
      reader.readAsDataURL(blob);
    });
  }

  // Images over 2000 px on a side are scaled down in the page, as pi does before it sends.
  function fitted(file) {
    if (!window.createImageBitmap || file.type === "image/gif") return Promise.resolve(file);
    return createImageBitmap(file).then(function (bitmap) {
      var scale = Math.min(1, MAX_SIDE / bitmap.width, MAX_SIDE / bitmap.height);
      if (scale >= 1) return file;
      var canvas = document.createElement("canvas");
      canvas.width = Math.round(bitmap.width * scale);
      canvas.height = Math.round(bitmap.height * scale);
      canvas.getContext("2d").drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      return new Promise(function (resolve) {
        canvas.toBlob(function (blob) { resolve(blob || file); }, file.type, 0.9);
      });
    }, function () { return file; });
  }

  function addFiles(files) {
    files = Array.prototype.filter.call(files || [], function (f) { return f && f.type.indexOf("image/") === 0; });
    if (!files.length) return;
    if (!imagesAllowed()) return say(imagesReason() + " Switch to a model that does to attach images.", "error");
    files.forEach(function (file) {
      if (IMAGE_TYPES.indexOf(file.type) === -1) return say(file.name + ": only PNG, JPEG, GIF and WebP images can be sent.", "error");
      if (images.length >= config.images.maxCount) return say("A message takes at most " + config.images.maxCount + " images.", "error");
      var slot = { name: file.name || "pasted image", blob: null, url: "" };
      images.push(slot);
      fitted(file).then(function (blob) {
        if (blob.size > config.images.maxBytes) {
          images.splice(images.indexOf(slot), 1);
          renderTray();
          return say(slot.name + " is over " + (config.images.maxBytes / 1048576).toFixed(1) + " MB.", "error");
        }
        slot.blob = blob;
        return readAsDataUrl(blob).then(function (url) { slot.url = url; renderTray(); });
      });
    });
  }

  // The steering and follow-up queues hold text only: images wait here, with a reason,
  // instead of being left behind by a queued message.
  function refuseQueuedImages(ev) {
    var d = ev.detail;
    var queued = d.path === chat.dataset.queueUrl || (d.path === chat.dataset.sendUrl && chat.dataset.running === "true");
    if (!images.length || !queued) return false;
    ev.preventDefault();
    say("Images cannot wait in the steering or follow-up queue: send them once the agent is done, or press Stop first. They stay attached.", "error");
    return true;
  }

  // The message's images go with it, as files of the box's multipart post.
  function attachImages(ev) {
    if (!images.length || ev.detail.path !== chat.dataset.sendUrl) return;
    if (images.some(function (image) { return !image.blob; })) {
      ev.preventDefault();
      say("The images are still being read; send again in a moment.", "info");
      return;
    }
    images.forEach(function (image) { ev.detail.formData.append("images", image.blob, image.name); });
  }

  // --- wiring ------------------------------------------------------------------------

  function bind() {
    // On the form itself: before chat.js's listener on the document.
    form.addEventListener("htmx:configRequest", function (ev) {
      var elt = ev.detail.elt;
      if (elt === form && ev.detail.path === chat.dataset.sendUrl && handleCommand(ev)) return;
      if (refuseQueuedImages(ev)) return;
      attachImages(ev);
    });
    form.addEventListener("htmx:afterRequest", function (ev) {
      var d = ev.detail;
      if (!d.xhr || d.xhr.status >= 300 || !d.pathInfo || d.pathInfo.requestPath !== chat.dataset.sendUrl) return;
      if (!d.requestConfig.formData.has("images")) return;
      images = [];
      renderTray();
    });
    // /name: the page's title follows.
    document.addEventListener("piweb:session-renamed", function (ev) {
      var name = ev.detail && ev.detail.name;
      if (!name) return;
      var title = document.querySelector(".session-head h1");
      if (title) title.textContent = name;
      var nameInput = document.getElementById("rename-input");
      if (nameInput) nameInput.value = name;
      document.title = name + " \u00b7 piweb";
    });

    window.addEventListener("keydown", function (ev) {
      if (ev.target !== input) return;
      if (!popup.hidden && items.length) {
        if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
          active = (active + (ev.key === "ArrowDown" ? 1 : items.length - 1)) % items.length;
          renderPopup();
          return stop(ev);
        }
        if (ev.key === "Tab" || (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing)) {
          stop(ev);
          return accept(active, ev.key === "Enter");
        }
        if (ev.key === "Escape") {
          closePopup();
          return stop(ev);
        }
      }
    }, true);

    input.addEventListener("input", function () {
      if (confirmedUnknown !== null && input.value.trim() !== confirmedUnknown) confirmedUnknown = null;
      updatePopup();
    });
    input.addEventListener("blur", function () { setTimeout(closePopup, 150); });
    popup.addEventListener("mousedown", function (ev) {
      var li = ev.target.closest(".composer-option");
      if (!li) return;
      ev.preventDefault(); // keep the focus in the box
      accept(Number(li.dataset.index), true);
    });

    input.addEventListener("paste", function (ev) {
      var files = ev.clipboardData ? Array.prototype.slice.call(ev.clipboardData.files || []) : [];
      if (!files.length) return;
      ev.preventDefault();
      addFiles(files);
    });
    form.addEventListener("dragover", function (ev) {
      if (ev.dataTransfer && Array.prototype.indexOf.call(ev.dataTransfer.types || [], "Files") !== -1) {
        ev.preventDefault();
        form.classList.add("composer-drop");
      }
    });
    form.addEventListener("dragleave", function () { form.classList.remove("composer-drop"); });
    form.addEventListener("drop", function (ev) {
      form.classList.remove("composer-drop");
      if (!ev.dataTransfer || !ev.dataTransfer.files.length) return;
      ev.preventDefault();
      addFiles(ev.dataTransfer.files);
    });
    var file = document.getElementById("composer-file");
    document.getElementById("composer-attach").addEventListener("click", function () { file.click(); });
    file.addEventListener("change", function () {
      addFiles(file.files);
      file.value = "";
    });
    tray.addEventListener("click", function (ev) {
      var remove = ev.target.closest(".composer-remove");
      if (!remove) return;
      images.splice(Number(remove.dataset.index), 1);
      renderTray();
      input.focus();
    });

    // The model changed (the picker or /model): may it take images?
    var label = document.getElementById("chat-model");
    if (label && window.MutationObserver) {
      new MutationObserver(syncAttach).observe(label, { childList: true, characterData: true, subtree: true });
    }
    syncAttach();
  }

  function init() {
    chat = document.getElementById("chat");
    box = document.getElementById("composer");
    var raw = document.getElementById("composer-config");
    if (!chat || !box || !raw || box.dataset.bound) return;
    box.dataset.bound = "1";
    config = JSON.parse(raw.textContent);
    config.commands.forEach(function (c) {
      if (c.sends) sent[c.name] = c;
      else commands[c.name] = c;
    });
    input = document.getElementById("chat-input");
    form = document.getElementById("chat-form");
    popup = document.getElementById("composer-complete");
    tray = document.getElementById("composer-images");
    notice = document.getElementById("chat-notice");
    bind();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
