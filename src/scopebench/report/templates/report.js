// scopebench HTML report: item browser filters and thumbnails. No network, no libraries.
(function () {
  "use strict";
  var thumbs = JSON.parse(document.getElementById("sb-thumbs").textContent);
  var imgs = document.querySelectorAll("img[data-thumb]");
  for (var i = 0; i < imgs.length; i++) {
    var src = thumbs[imgs[i].getAttribute("data-thumb")];
    if (src) { imgs[i].src = src; }
  }

  var rows = Array.prototype.slice.call(document.querySelectorAll("article.item"));
  // Parse each row's data attributes once: filtering then touches no JSON.
  var parsed = rows.map(function (el) {
    return {
      el: el,
      task: el.getAttribute("data-task"),
      groups: JSON.parse(el.getAttribute("data-groups")),
      outcomes: JSON.parse(el.getAttribute("data-outcomes"))
    };
  });
  var fTask = document.getElementById("f-task");
  var fGroup = document.getElementById("f-group");
  var fOutcome = document.getElementById("f-outcome");
  var fModel = document.getElementById("f-model");
  var counter = document.getElementById("sb-counter");

  function apply() {
    var task = fTask.value, group = fGroup.value, outcome = fOutcome.value;
    var model = parseInt(fModel.value, 10);
    var shown = 0;
    for (var i = 0; i < parsed.length; i++) {
      var r = parsed[i];
      var ok = (!task || r.task === task) &&
               (!group || r.groups.indexOf(group) >= 0) &&
               (!outcome || r.outcomes[model] === outcome);
      r.el.hidden = !ok;
      if (ok) { shown++; }
    }
    counter.textContent = shown + " of " + parsed.length + " items shown";
  }

  [fTask, fGroup, fOutcome, fModel].forEach(function (el) { el.addEventListener("change", apply); });
  apply();
})();
