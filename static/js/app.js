// Typesets $…$ math with KaTeX in the .math blocks of every piece htmx inserts (and the page itself),
// moves keyboard focus to the first field the server marked invalid, and to a result once graded.
(function () {
  "use strict";
  var MATH = {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "$", right: "$", display: false },
    ],
    ignoredTags: ["script", "noscript", "style", "textarea", "pre", "code", "option", "input"],
    throwOnError: false,
  };

  // Only instructor-authored text marked class="math" (statement, prompt, hint) is typeset.
  // Everything else - answers, diagnoses quoting a student's exception message, history -
  // is student-controlled and must never become KaTeX (a 2000 px box, a fake "correct").
  function typeset(root) {
    if (!window.renderMathInElement || !root.querySelectorAll) {
      return;
    }
    var blocks = Array.prototype.slice.call(root.querySelectorAll(".math"));
    if (root.classList && root.classList.contains("math")) {
      blocks.push(root);
    }
    blocks.forEach(function (block) {
      window.renderMathInElement(block, MATH);
    });
  }

  // After a refused post (400) the form was replaced; keyboard users land on the field to fix.
  function focusFirstError(event) {
    var xhr = event.detail.xhr;
    var invalid = document.querySelector("#answer-form [aria-invalid=true]");
    if (xhr && xhr.status === 400 && invalid) {
      invalid.focus();
    }
  }

  // When a polled submission finishes grading, keyboard and screen-reader users land on the
  // result and everyone sees it: focus it and scroll it into view (not on a full page load).
  function revealFinished(elt) {
    var done = elt && elt.matches && elt.matches("#status-region [data-status=graded], #status-region [data-status=error]");
    if (done && elt !== document.activeElement) {
      elt.focus({ preventScroll: true });
      elt.scrollIntoView({ block: "start", behavior: "smooth" });
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (window.htmx) {
      window.htmx.onLoad(typeset); // called for the body too, and for every swapped-in fragment
      window.htmx.onLoad(revealFinished);
    } else {
      typeset(document.body);
    }
    document.body.addEventListener("htmx:afterSettle", focusFirstError);
    // A post refused before htmx took over the form (a click during page load, or no htmx) comes back
    // as a whole page: land on the field to fix all the same.
    var invalid = document.querySelector("#answer-form [aria-invalid=true]");
    if (invalid) {
      invalid.focus();
    }
  });
})();
