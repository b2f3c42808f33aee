// The navigation bar's menus are <details> elements: they open and close by themselves (click,
// Enter, Space). This adds what a menu is expected to do besides: one open at a time, closed by a
// click elsewhere or by Escape (focus back on its title), and arrow keys to move through the items.
(function () {
  "use strict";
  const MENU = "details.aq-menu";

  function openMenus() {
    return Array.from(document.querySelectorAll(MENU + "[open]"));
  }

  function items(menu) {
    return Array.from(menu.querySelectorAll(".dropdown-item"));
  }

  document.addEventListener("toggle", function (event) {
    const menu = event.target;
    if (!(menu instanceof HTMLDetailsElement) || !menu.matches(MENU) || !menu.open) return;
    openMenus().forEach(function (other) { if (other !== menu) other.open = false; });
  }, true); // toggle does not bubble

  document.addEventListener("click", function (event) {
    openMenus().forEach(function (menu) {
      if (!menu.contains(event.target)) menu.open = false;
    });
  });

  document.addEventListener("keydown", function (event) {
    const menu = event.target instanceof Element ? event.target.closest(MENU) : null;
    if (event.key === "Escape") {
      openMenus().forEach(function (open) {
        open.open = false;
        if (open === menu) open.querySelector("summary").focus();
      });
      return;
    }
    if (!menu || (event.key !== "ArrowDown" && event.key !== "ArrowUp")) return;
    const list = items(menu);
    if (!list.length) return;
    event.preventDefault();
    if (!menu.open) menu.open = true;
    const at = list.indexOf(document.activeElement);
    const step = event.key === "ArrowDown" ? 1 : -1;
    const next = at < 0 ? (step > 0 ? 0 : list.length - 1) : (at + step + list.length) % list.length;
    list[next].focus();
  });
})();
