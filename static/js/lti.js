// LTI pages: the cookie check before the OIDC login, and auto-submitted forms back to the LMS.
(function () {
  "use strict";

  function cookiesWork() {
    var secure = window.location.protocol === "https:" ? "; SameSite=None; Secure" : "";
    document.cookie = "lti_cookie_test=1; path=/" + secure;
    var works = document.cookie.indexOf("lti_cookie_test=1") !== -1;
    document.cookie = "lti_cookie_test=; path=/; max-age=0" + secure;
    return works;
  }

  function checkCookies(form) {
    if (cookiesWork()) {
      form.submit();
      return;
    }
    document.getElementById("lti-checking").hidden = true;
    document.getElementById("lti-blocked").hidden = false;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var check = document.querySelector("[data-lti-cookie-check]");
    if (check) { checkCookies(check); }
    var auto = document.querySelector("[data-lti-autosubmit]");
    if (auto) { auto.submit(); }
  });
})();
