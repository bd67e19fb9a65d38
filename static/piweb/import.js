// Importing several session files at once on the sessions list: files or whole folders
// dropped anywhere on the page (folders walked with webkitGetAsEntry), or chosen with the
// "files" (multiple) and "a folder" (webkitdirectory) pickers. Only *.jsonl files are
// taken; the others get a row saying why they were skipped. Each file is its own
// request to /import/ (streamed to disk by the server, as the single-file form is), one
// after the other, so one bad file never stops the rest. Each row then shows the
// server's import partial, which polls its job until the file is imported or refused.
(function () {
  "use strict";
  var zone = null;
  var queue = [];
  var sending = false;

  function csrfToken() {
    var input = document.querySelector("#import-form [name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function addRow(path, state, text) {
    var row = document.createElement("li");
    row.className = "import-row";
    row.dataset.state = state;
    var name = document.createElement("span");
    name.className = "import-name";
    name.textContent = path;
    var status = document.createElement("span");
    status.className = "import-state";
    status.textContent = text;
    var outcome = document.createElement("div");
    outcome.className = "import-outcome";
    row.append(name, " — ", status, outcome);
    document.getElementById("import-rows").append(row);
    return row;
  }

  function setState(row, state, text) {
    row.dataset.state = state;
    row.querySelector(".import-state").textContent = text;
  }

  function take(files) {
    if (!files.length) return; // a drop of text or links: nothing to import
    var card = document.getElementById("import-card");
    if (card) card.open = true;
    var limit = Number(zone.dataset.maxBytes) || 0;
    files.sort(function (a, b) {
      return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
    });
    files.forEach(function (item) {
      if (item.unreadable) {
        addRow(item.path, "failed", "failed: the browser could not read it (" + item.unreadable + ")");
      } else if (!/\.jsonl$/i.test(item.file.name)) {
        addRow(item.path, "skipped", "skipped: not a .jsonl file");
      } else if (limit && item.file.size > limit) {
        addRow(item.path, "failed",
          "failed: larger than the import limit (" + zone.dataset.maxLabel + "): not sent");
      } else {
        queue.push({ file: item.file, row: addRow(item.path, "queued", "queued") });
      }
    });
    sendNext();
  }

  function sendNext() {
    if (sending || !queue.length) return;
    sending = true;
    var next = queue.shift();
    upload(next.file, next.row, function () {
      sending = false;
      sendNext();
    });
  }

  function upload(file, row, done) {
    var data = new FormData();
    data.append("file", file, file.name);
    var xhr = new XMLHttpRequest();
    xhr.open("POST", zone.dataset.importUrl);
    xhr.setRequestHeader("X-CSRFToken", csrfToken());
    xhr.setRequestHeader("HX-Request", "true"); // the answer is the import partial
    xhr.upload.onprogress = function (ev) {
      if (ev.lengthComputable) {
        setState(row, "uploading", "uploading " + Math.floor((100 * ev.loaded) / ev.total) + "%");
      }
    };
    xhr.onload = function () {
      var type = xhr.getResponseHeader("Content-Type") || "";
      if ((xhr.status === 202 || xhr.status === 400) && type.indexOf("text/html") === 0) {
        var outcome = row.querySelector(".import-outcome");
        outcome.innerHTML = xhr.responseText; // our own partial, escaped by the server
        showOutcome(row);
        if (window.htmx) window.htmx.process(outcome);
      } else if (xhr.status === 413) {
        setState(row, "failed", "failed: larger than this server accepts");
      } else {
        setState(row, "failed", "failed: the server answered " + xhr.status);
      }
      done();
    };
    xhr.onerror = function () {
      setState(row, "failed", "failed: the upload was cut off (connection lost)");
      done();
    };
    setState(row, "uploading", "uploading 0%");
    xhr.send(data);
  }

  // The row's state follows its import partial (queued, importing, done, failed).
  function showOutcome(row) {
    var result = row.querySelector(".import-result");
    if (!result) return;
    var state = result.dataset.importState;
    var words = { queued: "queued for import", importing: "importing", done: "imported", failed: "failed" };
    setState(row, state, words[state] || state);
  }

  document.addEventListener("htmx:load", function (ev) {
    var row = ev.target.closest && ev.target.closest(".import-row");
    if (row) showOutcome(row);
  });

  // --- folders and files from a drop
  // An entry the browser cannot read still gets its row, with the browser's reason.
  function unreadable(entry, out, finish) {
    return function (error) {
      var path = entry.fullPath.replace(/^\//, "") + (entry.isDirectory ? "/" : "");
      out.push({ path: path, unreadable: (error && error.name) || "unknown error" });
      finish();
    };
  }

  function readAll(reader, into, finish, failed) {
    reader.readEntries(function (batch) {
      if (!batch.length) return finish();
      into.push.apply(into, batch);
      readAll(reader, into, finish, failed); // a directory answers in batches
    }, failed);
  }

  function walk(entry, out, finish) {
    if (entry.isFile) {
      entry.file(function (file) {
        out.push({ file: file, path: entry.fullPath.replace(/^\//, "") });
        finish();
      }, unreadable(entry, out, finish));
      return;
    }
    var children = [];
    readAll(entry.createReader(), children, function () {
      var left = children.length;
      if (!left) return finish();
      children.forEach(function (child) {
        walk(child, out, function () {
          if (--left === 0) finish();
        });
      });
    }, unreadable(entry, out, finish));
  }

  function fromDrop(transfer) {
    var out = [];
    var entries = [];
    // Every item is read now: a DataTransfer is emptied once the drop handler returns.
    Array.prototype.forEach.call(transfer.items || [], function (item) {
      if (item.kind !== "file") return;
      var entry = item.webkitGetAsEntry && item.webkitGetAsEntry();
      if (entry) entries.push(entry);
      else {
        var file = item.getAsFile();
        if (file) out.push({ file: file, path: file.name });
      }
    });
    if (!entries.length) return take(out);
    var left = entries.length;
    entries.forEach(function (entry) {
      walk(entry, out, function () {
        if (--left === 0) take(out);
      });
    });
  }

  function carriesFiles(ev) {
    return ev.dataTransfer && Array.prototype.indexOf.call(ev.dataTransfer.types, "Files") >= 0;
  }

  var depth = 0;
  document.addEventListener("DOMContentLoaded", function () {
    zone = document.querySelector("[data-import-drop]");
    if (!zone) return;
    ["import-files", "import-folder"].forEach(function (id) {
      var input = document.getElementById(id);
      input.addEventListener("change", function () {
        take(Array.prototype.map.call(input.files, function (file) {
          return { file: file, path: file.webkitRelativePath || file.name };
        }));
        input.value = "";
      });
    });
    document.addEventListener("dragenter", function (ev) {
      if (!carriesFiles(ev)) return;
      depth++;
      document.body.classList.add("import-dragging");
    });
    document.addEventListener("dragleave", function (ev) {
      if (!carriesFiles(ev)) return;
      if (--depth <= 0) {
        depth = 0;
        document.body.classList.remove("import-dragging");
      }
    });
    document.addEventListener("dragover", function (ev) {
      if (carriesFiles(ev) && !ev.target.matches("input[type=file]")) ev.preventDefault();
    });
    document.addEventListener("drop", function (ev) {
      depth = 0;
      document.body.classList.remove("import-dragging");
      // A drop on a file input fills that input, as the browser does it.
      if (!ev.dataTransfer || ev.target.matches("input[type=file]")) return;
      ev.preventDefault();
      fromDrop(ev.dataTransfer);
    });
  });
})();
