// Opens a backward-flow picture in a viewer (scroll, pinch, zoom buttons) instead of leaving the
// page: fitted to the screen at first, so every node is in view, then zoomed in to read a part.
// Without JavaScript the picture's link opens the SVG itself in a new tab.
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
    scale = Math.min(Math.max(scale * factor, 0.1), 6);
    if (!image.naturalWidth) {
      return;
    }
    image.style.width = Math.round(image.naturalWidth * scale) + "px";
  }

  function fit() {
    var room = image.parentNode;
    if (!image.naturalWidth || !room.clientWidth) {
      return;
    }
    scale = Math.min(1, (room.clientWidth - 16) / image.naturalWidth, (room.clientHeight - 16) / image.naturalHeight);
    zoom(1);
  }

  function build() {
    viewer = document.createElement("dialog");
    viewer.className = "graph-viewer";
    viewer.setAttribute("aria-label", "Picture, full size");
    var bar = document.createElement("div");
    bar.className = "graph-viewer-bar";
    var title = document.createElement("span");
    title.className = "graph-viewer-title";
    title.textContent = "Zoom in to read, scroll or pinch to explore";
    bar.appendChild(title);
    bar.appendChild(button("−", "Zoom out", function () { zoom(1 / 1.25); }));
    bar.appendChild(button("+", "Zoom in", function () { zoom(1.25); }));
    bar.appendChild(button("Fit", "Fit the picture to the screen", fit));
    bar.appendChild(button("Close", "Close the picture", function () { viewer.close(); }));
    var scroll = document.createElement("div");
    scroll.className = "graph-viewer-scroll";
    image = document.createElement("img");
    image.addEventListener("load", fit);
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
    if (image.complete) {
      fit(); // the same picture again: no new load event
    }
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
