// Bulk selection on list pages. The table polls and replaces itself, so the ticked ids are kept
// here and put back after each swap; ids no longer on the page are forgotten (what is sent is
// exactly what is ticked on the page). With every row of the page ticked and more rows matching
// the filter, a banner offers them all (as Gmail does); chosen, the form sends the table's
// filter instead of the ids, and the server finds the matches again when the action runs.
(() => {
  if (window.aqBulk) return; // the bar may be included once per page load only
  window.aqBulk = true;
  const chosen = new Set();
  // The filter whose matches are all chosen, or null: only the ticked ids are.
  let matching = null;
  const boxes = () => [...document.querySelectorAll("input.aq-bulk-pk")];
  const table = () => document.querySelector("[data-bulk-total]");
  const fmt = (n) => Number(n).toLocaleString("en-US");

  function sync() {
    const present = boxes();
    const here = new Set(present.map((b) => b.value));
    for (const id of [...chosen]) if (!here.has(id)) chosen.delete(id);
    present.forEach((b) => { b.checked = chosen.has(b.value); });
    const ticked = present.filter((b) => b.checked).length;
    const whole = present.length > 0 && ticked === present.length;
    document.querySelectorAll("input.aq-bulk-all").forEach((all) => {
      all.checked = whole;
      all.indeterminate = ticked > 0 && ticked < present.length;
    });
    const t = table();
    const total = t ? Number(t.dataset.bulkTotal) : 0;
    // A row unticked, or another filter (the form swapped the table), ends "all matching".
    if (!whole || !t || t.dataset.bulkFilter !== matching) matching = null;
    const banner = document.getElementById("bulk-banner");
    if (banner) {
      banner.hidden = !(whole && total > present.length);
      banner.querySelector(".aq-bulk-page").hidden = matching !== null;
      banner.querySelector(".aq-bulk-matching").hidden = matching === null;
      banner.querySelector(".aq-bulk-page-n").textContent = fmt(present.length);
      banner.querySelectorAll(".aq-bulk-total").forEach((e) => { e.textContent = fmt(total); });
    }
    const count = matching !== null ? fmt(total) : String(chosen.size);
    document.querySelectorAll(".aq-bulk-count").forEach((e) => { e.textContent = count; });
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
  document.addEventListener("click", (e) => {
    if (e.target.closest("#bulk-select-matching")) {
      const t = table();
      matching = t ? t.dataset.bulkFilter : null;
    } else if (e.target.closest("#bulk-clear")) {
      matching = null;
      chosen.clear();
    } else {
      return;
    }
    sync();
  });
  // The form's data, whoever builds it (a plain submit or htmx): the filter instead of the ids.
  document.addEventListener("formdata", (e) => {
    if (e.target.id !== "bulk-form" || matching === null) return;
    e.formData.delete("ids");
    e.formData.set("filter", matching);
  });
  document.addEventListener("htmx:afterSwap", sync);
  const start = () => { boxes().forEach((b) => { if (b.checked) chosen.add(b.value); }); sync(); };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
