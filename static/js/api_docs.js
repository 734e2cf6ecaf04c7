// The API docs page (/api/docs/): Swagger UI drawn from the OpenAPI schema. A static file because the CSP
// forbids inline script; validatorUrl null keeps Swagger UI from loading a badge from swagger.io.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("swagger-ui");
    if (!root || !window.SwaggerUIBundle) {
      return;
    }
    window.SwaggerUIBundle({
      url: root.getAttribute("data-schema-url"),
      domNode: root,
      deepLinking: true,
      validatorUrl: null,
      presets: [window.SwaggerUIBundle.presets.apis],
      layout: "BaseLayout",
    });
  });
})();
