// Opens a backward-flow picture full size in a viewer (scroll, pinch, zoom buttons) instead of
// leaving the page. Without JavaScript the picture's link opens the SVG itself in a new tab.
(function () {
  "use strict";
  var viewer = null;
  var image = null;
  var scale = 1;

  function button(text, label, onClick) {
    var element = document.createElement("button");
    element.type = "button";
    element.textContent = text;
    element.setAttribute("aria-label", label);
    element.addEventListener("click", onClick);
    return element;
  }

  function zoom(factor) {
    scale = Math.min(Math.max(scale * factor, 0.25), 6);
    if (!image.naturalWidth) {
      return;
    }
    image.style.width = Math.round(image.naturalWidth * scale) + "px";
  }

  function build() {
    viewer = document.createElement("dialog");
    viewer.className = "graph-viewer";
    viewer.setAttribute("aria-label", "Picture, full size");
    var bar = document.createElement("div");
    bar.className = "graph-viewer-bar";
    var title = document.createElement("span");
    title.className = "graph-viewer-title";
    title.textContent = "Full size: scroll or pinch to explore";
    bar.appendChild(title);
    bar.appendChild(button("−", "Zoom out", function () { zoom(1 / 1.25); }));
    bar.appendChild(button("+", "Zoom in", function () { zoom(1.25); }));
    bar.appendChild(button("Close", "Close the picture", function () { viewer.close(); }));
    var scroll = document.createElement("div");
    scroll.className = "graph-viewer-scroll";
    image = document.createElement("img");
    scroll.appendChild(image);
    viewer.appendChild(bar);
    viewer.appendChild(scroll);
    document.body.appendChild(viewer);
  }

  function open(link) {
    if (!viewer) {
      build();
    }
    var small = link.querySelector("img");
    scale = 1;
    image.removeAttribute("style");
    image.alt = small ? small.alt : "";
    image.src = link.href;
    viewer.showModal();
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.graph-open") : null;
    if (!link || typeof HTMLDialogElement === "undefined" || event.ctrlKey || event.metaKey) {
      return; // no dialog support, or the user asked for a new tab: follow the link
    }
    event.preventDefault();
    open(link);
  });
})();
