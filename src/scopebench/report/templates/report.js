// scopebench HTML report: the item browser. No network, no libraries.
// The page embeds an index (id, task, groups, one outcome code per run for every item); filters
// run over it. Item texts and thumbnails come from <items_dir>/items-NNNNN.js, one script per
// page of items, added to the document only when a page that needs it is shown.
(function () {
  "use strict";
  var index = JSON.parse(document.getElementById("sb-index").textContent);
  var placeholder = JSON.parse(document.getElementById("sb-placeholder").textContent);
  var rows = index.rows, size = index.page_size, outcomes = index.outcomes;
  var fTask = document.getElementById("f-task");
  var fGroup = document.getElementById("f-group");
  var fOutcome = document.getElementById("f-outcome");
  var fModel = document.getElementById("f-model");
  var counter = document.getElementById("sb-counter");
  var pageLabel = document.getElementById("sb-page");
  var prev = document.getElementById("sb-prev"), next = document.getElementById("sb-next");
  var status = document.getElementById("sb-status");
  var list = document.getElementById("items");
  var loaded = {}, waiting = {}, matched = [], current = 0, generation = 0;

  // Item files call this when they load.
  window.sbPage = function (n, data) {
    loaded[n] = data;
    var cbs = waiting[n] || [];
    delete waiting[n];
    cbs.forEach(function (cb) { cb(); });
  };

  function load(n, done) {
    if (loaded[n]) { done(); return; }
    if (waiting[n]) { waiting[n].push(done); return; }
    waiting[n] = [done];
    var s = document.createElement("script");
    s.src = index.items_dir + "/items-" + ("0000" + n).slice(-5) + ".js";
    s.onerror = function () {
      list.setAttribute("data-state", "failed");
      status.textContent = "Cannot load " + s.src + ": keep the folder " + index.items_dir +
        "/ beside this HTML file.";
    };
    document.head.appendChild(s);
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }  // text, never markup
    return e;
  }

  function render(row, item, thumbs) {
    var art = el("article", "item");
    art.setAttribute("data-id", row[0]);
    art.setAttribute("data-task", index.tasks[row[1]]);
    var tb = el("div", "thumbs");
    item.images.forEach(function (im) {
      var img = el("img");
      img.setAttribute("data-thumb", im[0]);
      img.alt = im[1]; img.title = im[1];
      img.src = im[0] === "missing" ? placeholder : thumbs[im[0]];
      tb.appendChild(img);
    });
    if (item.more_images) { tb.appendChild(el("div", "note", "+" + item.more_images + " more images")); }
    var body = el("div", "body");
    var meta = el("div", "meta");
    meta.appendChild(el("code", null, item.id));
    meta.appendChild(document.createTextNode(" · " + item.meta));
    body.appendChild(meta);
    if (item.problems) { body.appendChild(el("div", "meta warn", "data problems: " + item.problems)); }
    if (item.context) { body.appendChild(el("p", "context", item.context)); }
    body.appendChild(el("p", "question", item.question));
    if (item.choices.length) {
      var ol = el("ol", "options");
      ol.type = "A";
      item.choices.forEach(function (c, i) { ol.appendChild(el("li", i === item.answer_index ? "answer" : null, c)); });
      body.appendChild(ol);
    }
    if (item.truth !== null) {
      var t = el("p", "truth", "correct answer: ");
      t.appendChild(el("b", null, item.truth));
      body.appendChild(t);
    }
    var table = el("table", "answers");
    var head = el("tr");
    ["model", "outcome", "answer", "raw response / error"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    table.appendChild(head);
    item.runs.forEach(function (r, i) {
      var tr = el("tr");
      tr.appendChild(el("td", null, index.labels[i]));
      var oc = r ? r.outcome : "absent";
      var td = el("td");
      td.appendChild(el("span", "badge " + oc, oc));
      tr.appendChild(td);
      tr.appendChild(el("td", null, r ? r.answer : ""));
      var detail = el("td");
      if (r && r.prompt) {
        var shown = el("details", "prompt");
        shown.appendChild(el("summary", null, "prompt" + (r.sent_images.length ? " (images: " +
          r.sent_images.join(", ") + ")" : "")));
        if (r.system) { shown.appendChild(el("pre", "system", r.system)); }
        shown.appendChild(el("pre", "prompt", r.prompt));
        detail.appendChild(shown);
      }
      if (r && r.response) { detail.appendChild(el("pre", "response", r.response)); }
      if (r) { r.notes.forEach(function (n) { detail.appendChild(el("div", "note", n)); }); }
      tr.appendChild(detail);
      table.appendChild(tr);
    });
    body.appendChild(table);
    art.appendChild(tb);
    art.appendChild(body);
    return art;
  }

  function show() {
    var pages = Math.max(1, Math.ceil(matched.length / size));
    current = Math.min(Math.max(current, 0), pages - 1);
    var slice = matched.slice(current * size, (current + 1) * size);
    var first = slice.length ? current * size + 1 : 0;
    pageLabel.textContent = "page " + (current + 1) + " of " + pages + " (items " + first + "–" +
      (current * size + slice.length) + ")";
    prev.disabled = current === 0;
    next.disabled = current >= pages - 1;
    var need = {};
    slice.forEach(function (pos) { need[Math.floor(pos / size) + 1] = true; });
    var files = Object.keys(need), left = files.length, gen = ++generation;
    function draw() {
      if (gen !== generation) { return; }  // a newer filter or page replaced this one
      list.textContent = "";
      slice.forEach(function (pos) {
        var data = loaded[Math.floor(pos / size) + 1];
        list.appendChild(render(rows[pos], data.items[pos % size], data.thumbs));
      });
      list.setAttribute("data-page", String(current + 1));
      list.setAttribute("data-state", "ready");
      status.textContent = "";
    }
    if (!left) { draw(); return; }
    list.setAttribute("data-state", "loading");
    status.textContent = "loading…";
    files.forEach(function (n) { load(Number(n), function () { if (--left === 0) { draw(); } }); });
  }

  function apply() {
    var task = fTask.value, group = fGroup.value, outcome = fOutcome.value;
    var model = parseInt(fModel.value, 10);
    var t = task ? index.tasks.indexOf(task) : -1;
    var g = group ? index.groups.indexOf(group) : -1;
    var o = outcome ? String(outcomes.indexOf(outcome)) : "";
    matched = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      if ((!task || r[1] === t) && (!group || r[2].indexOf(g) >= 0) && (!outcome || r[3].charAt(model) === o)) {
        matched.push(i);
      }
    }
    counter.textContent = matched.length + " of " + rows.length + " items match";
    current = 0;
    show();
  }

  prev.addEventListener("click", function () { current--; show(); });
  next.addEventListener("click", function () { current++; show(); });
  [fTask, fGroup, fOutcome, fModel].forEach(function (e) { e.addEventListener("change", apply); });
  apply();
})();
