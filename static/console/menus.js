// The navigation bar's menus are <details> elements: they open and close by themselves (click,
// Enter, Space). This adds what a menu is expected to do besides: one open at a time, closed by a
// click elsewhere or by Escape (focus back on its title), and arrow keys to move through the items.
// Below 1000 px the menus sit behind the "Menu" button (console.css): it opens and closes them
// (aria-expanded), and Escape or a click outside the bar closes them too.
(function () {
  "use strict";
  const MENU = "details.aq-menu";
  const TOGGLE = "#nav-toggle";

  function toggle() {
    return document.querySelector(TOGGLE);
  }

  function setExpanded(expanded) {
    const button = toggle();
    if (button) button.setAttribute("aria-expanded", expanded ? "true" : "false");
  }

  function isExpanded() {
    const button = toggle();
    return !!button && button.getAttribute("aria-expanded") === "true";
  }

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
    const target = event.target instanceof Element ? event.target : null;
    if (target && target.closest(TOGGLE)) {
      setExpanded(!isExpanded());
      return;
    }
    openMenus().forEach(function (menu) {
      if (!menu.contains(event.target)) menu.open = false;
    });
    if (isExpanded() && !(target && target.closest("nav.navbar"))) setExpanded(false);
  });

  document.addEventListener("keydown", function (event) {
    const menu = event.target instanceof Element ? event.target.closest(MENU) : null;
    if (event.key === "Escape") {
      const open = openMenus();
      open.forEach(function (one) {
        one.open = false;
        if (one === menu) one.querySelector("summary").focus();
      });
      // With no menu left open, Escape folds the narrow bar back behind its button.
      if (!open.length && isExpanded()) {
        setExpanded(false);
        toggle().focus();
      }
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
