/* The topology graph: queues as nodes (size from their READY depth), propagations as edges
   (colour and dash from their state, label from their rate), drawn by the vendored Cytoscape.js.

   The first picture comes with the page (json_script). Every few seconds the same URL is asked
   for ?format=json and the elements' data are updated in place: colours, labels and sizes change,
   positions do not, so the picture an operator is reading never jumps. Only when queues appear
   does the layout run again. The instance is window.aqGraph (the browser tests read it).

   With database links, sites are compound nodes ("groups"): this site's queues in one, each
   linked site's QUEUE@LINK nodes in another (a dashed red border when the site could not be
   read); edges on a cycle (A -> B -> A) have an orange halo and a "cycle" label. */
(function () {
  "use strict";

  // Bootstrap's colour names (jobs.choices.STATE_COLOURS) as drawable colours; "light" is for
  // unscheduled propagations, which must still show on a white page.
  const HEX = {
    primary: "#0d6efd",
    success: "#198754",
    info: "#0aa2c0",
    warning: "#e0a800",
    danger: "#dc3545",
    secondary: "#6c757d",
    light: "#adb5bd",
    dark: "#212529",
  };
  const REFRESH_MS = 5000;
  const LABEL_PX = 11; // node label size at zoom 1
  const MIN_LABEL_PX = 7; // smaller on screen than this, a label is not drawn
  const LANDMARK_PX = 10; // on-screen size of the busiest queues' labels in an overview

  const box = document.getElementById("topology");
  const dataTag = document.getElementById("topology-data");
  if (!box || !dataTag || typeof cytoscape !== "function") return;
  const status = document.getElementById("topology-status");
  const info = document.getElementById("topology-info");
  const filter = document.getElementById("topology-filter");

  // Depth grows the node on a log scale: 0 → 24 px, 10 → 36, 100 → 48, 10 000 → 72.
  const nodeSize = (depth) => 24 + 12 * Math.log10(1 + Math.max(0, depth));

  function nodeData(n) {
    const data = {
      id: n.id,
      name: n.name,
      depth: n.depth,
      kind: n.kind,
      table: n.table,
      url: n.url,
      site: n.site || "",
      // A remote queue whose site was not read has no depth: its name alone.
      label: n.depth == null ? n.name : `${n.name} (${n.depth})`,
      size: nodeSize(n.depth || 0),
    };
    if (n.parent) data.parent = n.parent;
    return data;
  }

  function siteData(s) {
    let label = s.local ? `${s.global_name} (this site)` : s.global_name;
    if (s.reachable === false) label += " — unreachable";
    return {
      id: s.id,
      name: s.global_name,
      label: label,
      isSite: true,
      local: !!s.local,
      links: (s.links || []).join(", "),
      unreachable: s.reachable === false,
      error: s.error || "",
      size: 0,
      depth: 0,
    };
  }

  function edgeData(e) {
    const rate = Number(e.rate || 0);
    return {
      id: e.id,
      name: e.name,
      source: e.source,
      target: e.target,
      state: e.state,
      rate: rate,
      backlog: e.backlog,
      url: e.url,
      remote: !!e.remote,
      cycle: !!e.cycle,
      site: e.site || "",
      readThrough: e.read_through || "",
      color: HEX[e.colour] || HEX.secondary,
      label:
        (e.read_through ? e.state : `${rate.toFixed(1)}/s`) +
        (e.backlog ? ` · ${e.backlog} behind` : "") +
        (e.cycle ? " · cycle" : ""),
    };
  }

  function elements(graph) {
    return [
      ...(graph.sites || []).map((s) => ({ group: "nodes", data: siteData(s) })),
      ...graph.nodes.map((n) => ({ group: "nodes", data: nodeData(n) })),
      ...graph.edges.map((e) => ({ group: "edges", data: edgeData(e) })),
    ];
  }

  // The flow layout (sources on top, destinations below) reads best and takes a few ms. When its
  // widest level is too wide for readable labels (a hub fanning out to a hundred queues), the
  // force-directed layout starts from it and spreads the queues over the whole area instead;
  // randomize: false keeps that picture the same from one load to the next.
  const FLOW = {
    name: "breadthfirst",
    directed: true,
    // (not maximal: true, which throws in Cytoscape 3.34 on graphs with several roots)
    avoidOverlap: true,
    spacingFactor: 1.2,
    nodeDimensionsIncludeLabels: true,
    animate: false,
    padding: 24,
  };
  const FORCE = {
    name: "cose",
    randomize: false,
    animate: false,
    nodeDimensionsIncludeLabels: true,
    idealEdgeLength: 48,
    nodeRepulsion: 6000,
    nodeOverlap: 20,
    numIter: 1000,
    padding: 24,
  };

  const initial = JSON.parse(dataTag.textContent);
  const cy = cytoscape({
    container: box,
    elements: elements(initial),
    layout: { name: "preset" },
    minZoom: 0.05,
    maxZoom: 4,
    boxSelectionEnabled: false,
    style: [
      {
        selector: "node",
        style: {
          label: "data(label)",
          width: "data(size)",
          height: "data(size)",
          "background-color": "#cfe2ff",
          "border-width": 1.5,
          "border-color": "#0d6efd",
          "font-size": LABEL_PX,
          color: "#212529",
          "text-valign": "bottom",
          "text-margin-y": 3,
          "text-background-color": "#ffffff",
          "text-background-opacity": 0.85,
          "text-background-padding": 1,
          // Labels give way when zoomed out (200 queues): hover, zoom in or filter to read them.
          "min-zoomed-font-size": MIN_LABEL_PX,
        },
      },
      { selector: "node[depth > 0]", style: { "background-color": "#6ea8fe" } },
      { selector: "node[depth >= 1000]", style: { "background-color": "#0d6efd" } },
      {
        selector: 'node[kind = "EXCEPTION_QUEUE"]',
        style: { "border-color": HEX.danger, "border-style": "dashed" },
      },
      {
        selector: "edge",
        style: {
          width: 2.5,
          "line-color": "data(color)",
          "target-arrow-color": "data(color)",
          "target-arrow-shape": "triangle",
          "arrow-scale": 1.1,
          "curve-style": "bezier",
          label: "data(label)",
          "font-size": 10,
          color: "#343a40",
          "text-rotation": "autorotate",
          "text-background-color": "#ffffff",
          "text-background-opacity": 0.85,
          "text-background-padding": 1,
          "min-zoomed-font-size": 8,
          // A thin line is hard to hit with a mouse: widen the clickable band.
          "overlay-padding": 6,
        },
      },
      {
        // Not moving on purpose: dashed as well as grey, for readers who cannot tell colours.
        selector: 'edge[state = "disabled"], edge[state = "stopped"], edge[state = "unscheduled"]',
        style: { "line-style": "dashed" },
      },
      { selector: 'edge[state = "failed"], edge[state = "stuck"]', style: { width: 4 } },
      {
        selector: "node[?isSite]",
        style: {
          shape: "round-rectangle",
          "background-color": "#f8f9fa",
          "background-opacity": 0.6,
          "border-width": 1.5,
          "border-color": "#6c757d",
          "border-style": "solid",
          "text-valign": "top",
          "text-halign": "center",
          "text-margin-y": -4,
          "font-size": 12,
          "font-weight": "bold",
          padding: 18,
        },
      },
      { selector: "node[?local]", style: { "border-color": HEX.primary } },
      {
        selector: "node[?unreachable]",
        style: { "border-color": HEX.danger, "border-style": "dashed", color: HEX.danger },
      },
      {
        selector: 'node[kind = "REMOTE"]',
        style: { shape: "round-rectangle", "background-color": "#e2e3e5" },
      },
      {
        // On a cycle (A -> B -> A): an orange halo under the line, whatever its state colour.
        selector: "edge[?cycle]",
        style: { "underlay-color": "#fd7e14", "underlay-opacity": 0.35, "underlay-padding": 4 },
      },
      { selector: "node.match", style: { "border-width": 4, "border-color": "#fd7e14" } },
      { selector: ".hidden", style: { display: "none" } },
      { selector: "node.landmark", style: { "font-size": "data(landmarkPx)", "z-index": 10 } },
      { selector: "node.hover", style: { "border-width": 3, "border-color": "#212529" } },
      { selector: "edge.hover", style: { width: 5 } },
    ],
  });
  window.aqGraph = cy;
  window.aqGraphRefreshes = 0;

  const readable = () => cy.zoom() * LABEL_PX >= MIN_LABEL_PX;

  // In an overview too wide for labels, the busiest queues keep theirs (larger), as landmarks.
  const LABEL_SPOTS = [
    { "text-valign": "bottom", "text-halign": "center", "text-margin-x": 0, "text-margin-y": 3 },
    { "text-valign": "top", "text-halign": "center", "text-margin-x": 0, "text-margin-y": -3 },
    { "text-valign": "center", "text-halign": "right", "text-margin-x": 3, "text-margin-y": 0 },
    { "text-valign": "center", "text-halign": "left", "text-margin-x": -3, "text-margin-y": 0 },
  ];
  const SPOT_KEYS = Object.keys(LABEL_SPOTS[0]).join(" ");
  const labelBox = (n) => n.boundingBox({ includeNodes: false, includeEdges: false });
  const overlap = (a, b) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;

  function markLandmarks() {
    cy.nodes(".landmark").removeClass("landmark").removeStyle(SPOT_KEYS);
    if (readable()) return;
    const size = Math.min(60, Math.ceil(LANDMARK_PX / cy.zoom()));
    const busiest = cy
      .nodes()
      .not(".hidden")
      .filter((n) => n.degree() >= 8)
      .sort((a, b) => b.degree() - a.degree())
      .slice(0, 40);
    busiest.data("landmarkPx", size).addClass("landmark");
    // Each landmark's label goes below, above, right or left of it: the first spot that clears
    // the labels placed before it and the landmarks' bodies, else the one that hides the least.
    const bodies = busiest.map((n) => n.boundingBox({ includeLabels: false }));
    const labels = [];
    busiest.forEach((n) => {
      let best = null;
      for (const spot of LABEL_SPOTS) {
        n.style(spot);
        const box = labelBox(n);
        const cost =
          2 * labels.filter((b) => overlap(b, box)).length +
          bodies.filter((b) => overlap(b, box)).length;
        if (best === null || cost < best.cost) best = { spot, box, cost };
        if (cost === 0) break;
      }
      n.style(best.spot);
      labels.push(best.box);
    });
  }

  let positions = null; // the whole graph's positions, kept while a filter shows a part of it

  function arrange() {
    // Breadthfirst does not place compound nodes; with site groups the force-directed layout
    // (which keeps each group's queues together) draws the whole picture.
    if (cy.nodes(":parent").nonempty()) {
      cy.layout({ ...FORCE, nestingFactor: 1.2, idealEdgeLength: 64 }).run();
      markLandmarks();
      return;
    }
    cy.layout(FLOW).run();
    if (readable()) return markLandmarks();
    cy.layout(FORCE).run();
    markLandmarks();
  }
  arrange();

  // Click a queue or a propagation: its page.
  cy.on("tap", "node, edge", (evt) => {
    const url = evt.target.data("url");
    if (url) window.location.assign(url);
  });

  function esc(text) {
    const span = document.createElement("span");
    span.textContent = text == null ? "" : String(text);
    return span.innerHTML;
  }
  function describe(ele) {
    const d = ele.data();
    if (ele.isNode() && d.isSite) {
      const where = d.local ? "this site" : `database links: ${esc(d.links || "none here")}`;
      const state = d.unreachable ? `<br><span class="text-danger">unreachable: ${esc(d.error)}</span>` : "";
      return `<strong>Site ${esc(d.name)}</strong><br>${where}${state}`;
    }
    if (ele.isNode() && d.kind === "REMOTE") {
      const depth = d.depth == null ? "depth not read" : `${d.depth} ready`;
      return `<strong>Queue ${esc(d.name)}</strong><br>at site ${esc(d.site)}<br>${depth}`;
    }
    if (ele.isNode()) {
      return `<strong>Queue ${esc(d.name)}</strong><br>${d.depth} ready<br>table ${esc(d.table)}`;
    }
    const src = cy.getElementById(d.source).data("name");
    const dst = cy.getElementById(d.target).data("name");
    const at = d.readThrough ? `<br>defined at ${esc(d.site)} (read through ${esc(d.readThrough)})` : "";
    return (
      `<strong>Propagation ${esc(d.name)}</strong><br>${esc(src)} → ${esc(dst)}` +
      `<br>state ${esc(d.state)}<br>${d.rate.toFixed(1)} messages/s<br>${d.backlog} behind` +
      at +
      (d.cycle ? "<br><strong>on a cycle</strong>" : "")
    );
  }
  cy.on("mouseover", "node, edge", (evt) => {
    evt.target.addClass("hover");
    box.style.cursor = "pointer";
    if (info) info.innerHTML = describe(evt.target);
  });
  cy.on("mouseout", "node, edge", (evt) => {
    evt.target.removeClass("hover");
    box.style.cursor = "";
  });

  // Filter by queue name: the matching queues and their neighbours alone, laid out as a flow of
  // their own (readable whatever the size of the whole); clearing the filter puts the whole
  // graph back where it was.
  let shownTerm = "";
  function applyFilter(relayout) {
    const term = (filter && filter.value ? filter.value : "").trim().toLowerCase();
    if (term && !positions) {
      positions = {};
      cy.nodes().forEach((n) => {
        positions[n.id()] = { ...n.position() };
      });
    }
    cy.batch(() => {
      cy.elements().removeClass("hidden match");
      if (!term) return;
      const hits = cy.nodes().filter((n) => n.data("name").toLowerCase().includes(term));
      const keep = hits.closedNeighborhood();
      cy.elements().not(keep).addClass("hidden");
      hits.addClass("match");
    });
    if (!relayout && term === shownTerm) return;
    shownTerm = term;
    if (term) {
      // The matches in the middle, their neighbours (senders and receivers) around them; the
      // landmarks' large labels go first, or they would set the spacing of every queue.
      cy.nodes(".landmark").removeClass("landmark").removeStyle(SPOT_KEYS);
      const shown = cy.elements().not(".hidden");
      if (shown.nonempty()) {
        shown
          .layout({
            name: "concentric",
            concentric: (n) => (n.hasClass("match") ? 2 : 1),
            levelWidth: () => 1,
            minNodeSpacing: 12,
            avoidOverlap: true,
            nodeDimensionsIncludeLabels: true,
            animate: false,
            fit: true,
            padding: FLOW.padding,
          })
          .run();
      }
      else if (status) status.textContent = `No queue name contains "${filter.value.trim()}".`;
    } else if (positions) {
      cy.nodes().positions((n) => positions[n.id()] || n.position());
      positions = null;
      cy.fit(cy.elements(), FLOW.padding);
    } else {
      cy.fit(cy.elements(), FLOW.padding);
    }
    markLandmarks();
    if (filter) {
      const url = new URL(window.location.href);
      if (term) url.searchParams.set("q", filter.value.trim());
      else url.searchParams.delete("q");
      window.history.replaceState(null, "", url);
    }
  }
  if (filter) {
    filter.addEventListener("input", () => applyFilter(false));
    if (filter.value) applyFilter(true);
  }
  const fitButton = document.getElementById("topology-fit");
  if (fitButton) {
    fitButton.addEventListener("click", () => {
      cy.fit(cy.elements().not(".hidden"), FLOW.padding);
      markLandmarks();
    });
  }

  // Periodic refresh: update the data in place; add and remove what appeared or went away.
  async function refresh() {
    if (document.hidden) return;
    let graph;
    try {
      const resp = await fetch(box.dataset.url, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
      graph = await resp.json();
    } catch (err) {
      if (status) status.textContent = `Refresh failed (${err.message}); trying again.`;
      return;
    }
    const seen = new Set();
    const added = [];
    const moved = [];
    cy.batch(() => {
      for (const site of graph.sites || []) {
        seen.add(site.id);
        const ele = cy.getElementById(site.id);
        if (ele.nonempty()) ele.data(siteData(site));
        else added.push({ group: "nodes", data: siteData(site) });
      }
      for (const n of graph.nodes) {
        seen.add(n.id);
        const ele = cy.getElementById(n.id);
        if (ele.nonempty()) {
          const data = nodeData(n);
          const parent = data.parent || null;
          delete data.parent; // a parent is changed with move(), not data()
          ele.data(data);
          const now = ele.parent().nonempty() ? ele.parent().id() : null;
          if (now !== parent) moved.push([ele, parent]);
        } else added.push({ group: "nodes", data: nodeData(n) });
      }
      for (const e of graph.edges) {
        seen.add(e.id);
        const ele = cy.getElementById(e.id);
        if (ele.nonempty()) ele.data(edgeData(e));
        else added.push({ group: "edges", data: edgeData(e) });
      }
      cy.elements()
        .filter((ele) => !seen.has(ele.id()))
        .remove();
      if (added.length) cy.add(added);
    });
    for (const [ele, parent] of moved) ele.move({ parent });
    if (moved.length || added.some((el) => el.group === "nodes")) {
      positions = null;
      arrange();
      applyFilter(true);
    } else {
      applyFilter(false);
    }
    window.aqGraphRefreshes += 1;
    if (status) {
      status.textContent =
        `${graph.nodes.length} queues, ${graph.edges.length} propagations` +
        ((graph.sites || []).length ? `, ${graph.sites.length} sites` : "") +
        "; " +
        `updated ${new Date().toLocaleTimeString()}.`;
    }
  }
  window.setInterval(refresh, Number(box.dataset.refreshMs || REFRESH_MS));
})();
