// Bulk selection on list pages. The table polls and replaces itself, so the ticked ids are kept
// here and put back after each swap; ids no longer on the page are forgotten (what is sent is
// exactly what is ticked on the page).
(() => {
  if (window.aqBulk) return; // the bar may be included once per page load only
  window.aqBulk = true;
  const chosen = new Set();
  const boxes = () => [...document.querySelectorAll("input.aq-bulk-pk")];

  function sync() {
    const present = boxes();
    const here = new Set(present.map((b) => b.value));
    for (const id of [...chosen]) if (!here.has(id)) chosen.delete(id);
    present.forEach((b) => { b.checked = chosen.has(b.value); });
    const ticked = present.filter((b) => b.checked).length;
    document.querySelectorAll("input.aq-bulk-all").forEach((all) => {
      all.checked = present.length > 0 && ticked === present.length;
      all.indeterminate = ticked > 0 && ticked < present.length;
    });
    document.querySelectorAll(".aq-bulk-count").forEach((e) => { e.textContent = chosen.size; });
    document.querySelectorAll("#bulk-form button[name=action]").forEach((b) => {
      b.disabled = chosen.size === 0;
    });
  }

  document.addEventListener("change", (e) => {
    const t = e.target;
    if (t.matches("input.aq-bulk-pk")) {
      if (t.checked) chosen.add(t.value); else chosen.delete(t.value);
    } else if (t.matches("input.aq-bulk-all")) {
      boxes().forEach((b) => { if (t.checked) chosen.add(b.value); else chosen.delete(b.value); });
    } else {
      return;
    }
    sync();
  });
  document.addEventListener("htmx:afterSwap", sync);
  const start = () => { boxes().forEach((b) => { if (b.checked) chosen.add(b.value); }); sync(); };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
