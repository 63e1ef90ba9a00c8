/* The storage tree: a location whose children are on the page shows and hides them in
 * place. Its control is a link to the location's page (what works without JavaScript);
 * a click, or Enter, toggles instead. Locations whose children are not on the page are
 * opened by htmx (hx-get), which swaps in the entry with them.
 */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    var toggle = event.target.closest ? event.target.closest("[data-tree-toggle]") : null;
    if (!toggle) return;
    var inside = document.getElementById(toggle.getAttribute("aria-controls"));
    if (!inside) return;
    event.preventDefault();
    var open = toggle.getAttribute("aria-expanded") === "true";
    toggle.setAttribute("aria-expanded", open ? "false" : "true");
    inside.hidden = open;
  });
})();
