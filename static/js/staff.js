// Staff pages: confirm destructive buttons (data-confirm); on the assignment form, add empty parts and
// fill a part's config box with its kind's template. No inline scripts (CSP).
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-confirm]");
    if (button && !window.confirm(button.getAttribute("data-confirm"))) {
      event.preventDefault();
    }
  });

  // Add empty parts from the formset's empty form (its __prefix__ numbered), counting them in TOTAL_FORMS.
  function addParts(box) {
    var total = document.getElementById("id_parts-TOTAL_FORMS");
    var template = document.getElementById("part-template");
    var count = parseInt(box.querySelector("select").value, 10) || 1;
    var max = parseInt(box.getAttribute("data-max"), 10) || 50;
    var first = null;
    for (var i = 0; i < count && parseInt(total.value, 10) < max; i++) {
      var index = parseInt(total.value, 10);
      var holder = document.createElement("div");
      holder.innerHTML = template.innerHTML.replace(/__prefix__/g, String(index));
      var part = holder.firstElementChild;
      part.querySelector("legend").textContent = "Part " + (index + 1);
      box.parentNode.insertBefore(part, box);
      total.value = String(index + 1);
      first = first || part;
    }
    if (first) {
      first.querySelector("input, select, textarea").focus();
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-add-parts]");
    if (button) {
      addParts(button.closest(".add-parts"));
    }
  });

  // A config box left empty, or holding another kind's untouched template, takes the chosen kind's.
  function templates() {
    return Array.prototype.slice.call(document.querySelectorAll("pre.config-template"));
  }
  function templateOf(kind) {
    var found = templates().filter(function (pre) { return pre.getAttribute("data-kind") === kind; })[0];
    return kind === "numeric" || !found ? "" : found.textContent;
  }
  function untouched(text) {
    return text.trim() === "" || templates().some(function (pre) { return pre.textContent.trim() === text.trim(); });
  }
  document.addEventListener("change", function (event) {
    var select = event.target.closest('select[name$="-kind"]');
    var part = select && select.closest(".part-form");
    var config = part && part.querySelector('textarea[name$="-config"]');
    if (config && untouched(config.value)) {
      config.value = templateOf(select.value);
    }
  });

  // The preview sits above the form: asking for one from anywhere down the form shows where it comes.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var preview = document.getElementById("preview");
    if (event.target && event.target.id === "preview-button" && preview) {
      preview.scrollIntoView({ block: "start" });
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".add-parts[hidden]").forEach(function (box) { box.hidden = false; });
  });
})();
