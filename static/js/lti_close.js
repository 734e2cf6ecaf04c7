// LTI Dynamic Registration: tell the LMS that opened this page (frame or window) that the tool is done.
document.addEventListener("click", (event) => {
  if (!event.target.closest("[data-lti-close]")) return;
  (window.opener || window.parent).postMessage({subject: "org.imsglobal.lti.close"}, "*");
});
