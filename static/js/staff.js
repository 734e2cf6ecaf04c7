// Staff pages: confirm destructive buttons (data-confirm). No inline scripts (CSP).
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-confirm]");
    if (button && !window.confirm(button.getAttribute("data-confirm"))) {
      event.preventDefault();
    }
  });
})();
