/* The topology graph: queues as nodes (size from their READY depth), propagations as edges
   (colour and dash from their state, label from their rate), drawn by the vendored Cytoscape.js.

   The first picture comes with the page (json_script). Every few seconds the same URL is asked
   for ?format=json and the elements' data are updated in place: colours, labels and sizes change,
   positions do not, so the picture an operator is reading never jumps. Only when queues appear
   does the layout run again. The instance is window.aqGraph (the browser tests read it).

   With database links, sites are compound nodes ("groups"): this site's queues in one, each
   linked site's QUEUE@LINK nodes in another (a dashed red border when the site could not be
   read); edges on a cycle (A -> B -> A) have an orange halo and a "cycle" label.

   Gateway links are groups too (violet), of their foreign queues NAME@LINK (hexagons); gateway
   jobs are edges between one of our queues and a foreign queue (chevron arrows, in the job's
   direction), coloured by their status as propagations are by their state. With more than one
   instance, this site's queues sit in dotted groups of their queue table's owner instance. */
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
      instance: n.instance || "",
      link: n.link || "",
      linkType: n.link_type || "",
      providerQueue: n.provider_queue || "",
      // A remote queue whose site was not read, or a foreign queue, has no depth: its name alone.
      label: n.depth == null ? n.name : `${n.name} (${n.depth})`,
      size: nodeSize(n.depth || 0),
    };
    if (n.parent) data.parent = n.parent;
    return data;
  }

  // Groups other than sites: an owner instance (inside this site's group when there are
  // sites) and a gateway link, labelled with the system it reaches.
  function instanceData(g) {
    const data = {
      id: g.id,
      name: g.name,
      label: `instance ${g.name}` + (g.status === "UP" ? "" : " — down"),
      isGroup: true,
      isInstance: true,
      down: g.status !== "UP",
      status: g.status,
      instId: g.inst_id,
      size: 0,
      depth: 0,
    };
    if (g.parent) data.parent = g.parent;
    return data;
  }

  function linkData(g) {
    return {
      id: g.id,
      name: g.name,
      label: `${g.name} · ${g.system}`,
      isGroup: true,
      isLink: true,
      linkType: g.link_type,
      system: g.system,
      agent: g.agent,
      href: g.url, // not "url": a click inside the box must not leave the page
      size: 40, // drawn as a plain box while no foreign queue is registered on it
      depth: 0,
    };
  }

  function siteData(s) {
    let label = s.local ? `${s.global_name} (this site)` : s.global_name;
    if (s.reachable === false) label += " — unreachable";
    return {
      id: s.id,
      name: s.global_name,
      label: label,
      isSite: true,
      isGroup: true,
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
    const job = e.kind === "gateway_job";
    let label;
    if (job) {
      label = e.state + (e.enabled ? "" : " · disabled");
    } else {
      label = e.read_through ? e.state : `${rate.toFixed(1)}/s`;
    }
    return {
      id: e.id,
      kind: e.kind || "propagation",
      job: job,
      enabled: e.enabled !== false,
      direction: e.direction || "",
      link: e.link || "",
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
      label: label + (e.backlog ? ` · ${e.backlog} behind` : "") + (e.cycle ? " · cycle" : ""),
    };
  }

  // Every node-like entry of a graph, groups before what they hold (an instance group sits in
  // this site's group, so sites come first).
  function nodeEntries(graph) {
    return [
      ...(graph.sites || []).map(siteData),
      ...(graph.instances || []).map(instanceData),
      ...(graph.gateway_links || []).map(linkData),
      ...graph.nodes.map(nodeData),
    ];
  }

  function elements(graph) {
    return [
      ...nodeEntries(graph).map((data) => ({ group: "nodes", data })),
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

  // With groups: room between the boxes for their labels and the edges that cross them.
  const GROUPED = {
    nestingFactor: 1.2,
    idealEdgeLength: 64,
    nodeRepulsion: 9000,
    componentSpacing: 60,
    gravity: 0.5,
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
        selector: "node[?isInstance]",
        style: {
          "border-style": "dotted",
          "border-width": 2,
          "border-color": "#495057",
          "background-color": "#e9ecef",
          "background-opacity": 0.45,
          "font-size": 11,
          "font-weight": "normal",
          color: "#495057",
          "text-valign": "top",
          "text-halign": "center",
          "text-margin-y": -2,
          padding: 12,
        },
      },
      { selector: "node[?down]", style: { "border-color": HEX.danger, color: HEX.danger } },
      {
        selector: "node[?isLink]",
        style: {
          shape: "round-rectangle",
          "background-color": "#f3edfc",
          "background-opacity": 0.7,
          "border-width": 1.5,
          "border-color": "#6f42c1",
          color: "#59359a",
          "text-valign": "top",
          "text-halign": "center",
          "text-margin-y": -4,
          "font-size": 12,
          "font-weight": "bold",
          padding: 14,
        },
      },
      {
        selector: 'node[kind = "FOREIGN"]',
        style: {
          shape: "hexagon",
          width: 30,
          height: 26,
          "background-color": "#e0cffc",
          "border-color": "#6f42c1",
        },
      },
      {
        // Gateway jobs: a chevron, to tell them from propagations at a glance.
        selector: "edge[?job]",
        style: { "target-arrow-shape": "chevron", "arrow-scale": 1.3 },
      },
      {
        // Not moving on purpose (disabled, or being removed): dashed, as propagations are.
        selector: 'edge[?job][!enabled], edge[?job][state = "DELETE_PENDING"]',
        style: { "line-style": "dashed" },
      },
      { selector: 'edge[?job][state = "FAILED"]', style: { width: 4 } },
      {
        // On a cycle (A -> B -> A): an orange halo under the line, whatever its state colour.
        selector: "edge[?cycle]",
        style: { "underlay-color": "#fd7e14", "underlay-opacity": 0.35, "underlay-padding": 4 },
      },
      // A filter match: blue, so it is never taken for the orange of a cycle.
      { selector: "node.match", style: { "border-width": 4, "border-color": "#0d6efd" } },
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

  // A small graph fitted to the canvas would be blown up to maxZoom (44 px labels): past this
  // zoom it is centred instead, its labels at most 1.75 times their size.
  const MAX_FIT_ZOOM = 1.75;
  function capZoom() {
    if (cy.zoom() <= MAX_FIT_ZOOM) return;
    cy.zoom(MAX_FIT_ZOOM);
    cy.center(cy.elements().not(".hidden"));
  }

  // With groups (sites, gateway links, instances), one force-directed layout of the whole
  // picture let an edge between two groups pull a queue out to the far side of its own group's
  // box, which then spanned (and covered) the others, the queues a thin band inside it. Instead
  // each top-level group is laid out by itself (the flow layout inside it; the force-directed
  // one when it holds groups of its own, as a site holds instances), then the boxes are packed
  // in rows to the canvas's proportions, side by side with a gap: no two can overlap.
  const GROUP_GAP = 48;
  const GRID = {
    name: "grid",
    avoidOverlap: true,
    avoidOverlapPadding: 16,
    nodeDimensionsIncludeLabels: true,
    condense: true,
    fit: false,
    animate: false,
  };
  // A unit holds no group below its own box (a site holds instances when there are several).
  const flat = (unit) => unit.nodes("[?isGroup]").every((g) => g.parent().empty());

  // The top-level boxes among ``eles`` (each with what it holds), and the queues outside any
  // group as one more unit.
  function units(eles) {
    const nodes = eles.nodes();
    const out = nodes
      .filter((n) => n.data("isGroup") && n.parent().empty())
      .map((g) => g.union(g.descendants().intersection(nodes)));
    const loose = nodes.filter((n) => !n.data("isGroup") && n.parent().empty());
    if (loose.nonempty()) out.push(loose);
    return out;
  }

  function layOutUnit(unit, eles) {
    const leaves = unit.nodes("[!isGroup]");
    if (leaves.empty()) return;
    const inner = unit.union(unit.edgesWith(unit).intersection(eles));
    const side = 110 * Math.ceil(Math.sqrt(leaves.length));
    const bounds = { x1: 0, y1: 0, w: side, h: side };
    if (flat(unit) && inner.edges().empty()) {
      // No propagation inside (a gateway link's foreign queues): a grid, none on another.
      leaves.layout({ ...GRID, boundingBox: bounds }).run();
    } else if (flat(unit)) {
      inner.not("node[?isGroup]").layout({ ...FLOW, fit: false, boundingBox: bounds }).run();
    } else {
      inner.layout({ ...FORCE, ...GROUPED, fit: false, boundingBox: bounds }).run();
    }
  }

  // Rows of boxes no wider than ``rowWidth``: each box's offset and the whole's size.
  function rows(sized, rowWidth) {
    const offsets = [];
    let x = 0;
    let y = 0;
    let rowHeight = 0;
    let width = 0;
    for (const { bb } of sized) {
      if (x > 0 && x + bb.w > rowWidth) {
        x = 0;
        y += rowHeight + GROUP_GAP;
        rowHeight = 0;
      }
      offsets.push({ dx: x - bb.x1, dy: y - bb.y1 });
      x += bb.w + GROUP_GAP;
      width = Math.max(width, x - GROUP_GAP);
      rowHeight = Math.max(rowHeight, bb.h);
    }
    return { offsets, w: width, h: y + rowHeight };
  }

  // The boxes in rows, the row width that lets the canvas show the whole largest: one row, or
  // a break after any box (a handful of groups: every choice is tried).
  function packUnits(list) {
    const cw = cy.width() || 1;
    const ch = cy.height() || 1;
    const sized = list.map((unit) => ({ unit, bb: unit.boundingBox() }));
    let best = null;
    let run = 0;
    for (const { bb } of sized) {
      run += bb.w + (run ? GROUP_GAP : 0);
      const packed = rows(sized, run);
      const scale = Math.min(cw / Math.max(packed.w, 1), ch / Math.max(packed.h, 1));
      if (best === null || scale > best.scale + 1e-9) best = { ...packed, scale };
    }
    sized.forEach(({ unit }, i) => {
      const { dx, dy } = best.offsets[i];
      // Childless nodes: the queues, and a box with nothing in it (a link without foreign
      // queues), which has a position of its own and would otherwise stay where it was drawn.
      unit.nodes().filter((n) => n.isChildless()).positions((n) => ({
        x: n.position("x") + dx,
        y: n.position("y") + dy,
      }));
    });
  }

  // Fitted, the packed boxes fill the canvas one way; the other way the queues are spread (up
  // to three times) to the canvas's proportions. Spreading only moves what is in different
  // boxes further apart, so no two boxes come to overlap.
  function spread(eles) {
    const leaves = eles.nodes().filter((n) => n.isChildless());
    if (leaves.length < 2 || !cy.width() || !cy.height()) return;
    const aspect = cy.width() / cy.height();
    const bb = eles.boundingBox();
    const cx = (bb.x1 + bb.x2) / 2;
    const cyy = (bb.y1 + bb.y2) / 2;
    const sx = Math.min(3, Math.max(1, (aspect * bb.h) / Math.max(bb.w, 1)));
    const sy = Math.min(3, Math.max(1, bb.w / aspect / Math.max(bb.h, 1)));
    if (sx <= 1.05 && sy <= 1.05) return;
    leaves.positions((n) => ({
      x: cx + (n.position("x") - cx) * sx,
      y: cyy + (n.position("y") - cyy) * sy,
    }));
  }

  function arrangeGroups(eles) {
    const list = units(eles);
    list.forEach((unit) => layOutUnit(unit, eles));
    packUnits(list);
    spread(eles);
    cy.fit(eles, FLOW.padding);
  }

  function arrange() {
    if (cy.nodes("[?isGroup]").nonempty()) {
      arrangeGroups(cy.elements());
      capZoom();
      markLandmarks();
      return;
    }
    cy.layout(FLOW).run();
    capZoom();
    if (readable()) return markLandmarks();
    cy.layout(FORCE).run();
    markLandmarks();
  }
  arrange();

  // Click a queue, a propagation or a gateway job: its page (a group's box is not a link).
  cy.on("tap", "node[!isGroup], edge", (evt) => {
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
    if (ele.isNode() && d.isInstance) {
      return `<strong>Instance ${esc(d.name)}</strong> (INST_ID ${esc(d.instId)})<br>${esc(d.status)}<br>owns the queue tables of the queues inside`;
    }
    if (ele.isNode() && d.isLink) {
      return `<strong>Gateway link ${esc(d.name)}</strong><br>${esc(d.system)} (${esc(d.linkType)})<br>agent ${esc(d.agent)}`;
    }
    if (ele.isNode() && d.kind === "FOREIGN") {
      return `<strong>Foreign queue ${esc(d.name)}</strong><br>${esc(d.providerQueue)} on ${esc(d.link)} (${esc(d.linkType)})<br>click: the link's page`;
    }
    if (ele.isNode() && d.kind === "REMOTE") {
      const depth = d.depth == null ? "depth not read" : `${d.depth} ready`;
      return `<strong>Queue ${esc(d.name)}</strong><br>at site ${esc(d.site)}<br>${depth}`;
    }
    if (ele.isNode()) {
      const owner = d.instance ? `<br>owner instance ${esc(d.instance)}` : "";
      return `<strong>Queue ${esc(d.name)}</strong><br>${d.depth} ready<br>table ${esc(d.table)}${owner}`;
    }
    const src = cy.getElementById(d.source).data("name");
    const dst = cy.getElementById(d.target).data("name");
    if (d.job) {
      return (
        `<strong>Gateway job ${esc(d.name)}</strong><br>${esc(src)} → ${esc(dst)}` +
        `<br>${esc(d.direction.toLowerCase())} on link ${esc(d.link)}` +
        `<br>status ${esc(d.state)}${d.enabled ? "" : " (disabled)"}<br>${d.backlog} behind` +
        (d.cycle ? "<br><strong>on a cycle</strong>" : "")
      );
    }
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
      // Queues and foreign queues match, not the groups; an edge (a propagation or a gateway
      // job) shows when either end matches, and the groups around what shows stay drawn.
      const hits = cy
        .nodes("[!isGroup]")
        .filter((n) => n.data("name").toLowerCase().includes(term));
      const near = hits.closedNeighborhood();
      const keep = near.union(near.nodes().ancestors());
      cy.elements().not(keep).addClass("hidden");
      hits.addClass("match");
    });
    if (!relayout && term === shownTerm) return;
    shownTerm = term;
    if (term) {
      // The matches in the middle, their neighbours (senders and receivers) around them; the
      // landmarks' large labels go first, or they would set the spacing of every queue.
      cy.nodes(".landmark").removeClass("landmark").removeStyle(SPOT_KEYS);
      // The groups follow their members; the layout places the members alone. Boxes shown
      // are laid out as the whole graph is, each apart from the others.
      const shown = cy.elements().not(".hidden").not("node[?isGroup]");
      if (shown.nonempty() && cy.nodes("[?isGroup]").not(".hidden").nonempty()) {
        arrangeGroups(cy.elements().not(".hidden"));
        capZoom();
      } else if (shown.nonempty()) {
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
        capZoom();
      }
      else if (status) status.textContent = `No queue name contains "${filter.value.trim()}".`;
    } else if (positions) {
      cy.nodes().positions((n) => positions[n.id()] || n.position());
      positions = null;
      cy.fit(cy.elements(), FLOW.padding);
      capZoom();
    } else {
      cy.fit(cy.elements(), FLOW.padding);
      capZoom();
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
      capZoom();
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
      for (const fresh of nodeEntries(graph)) {
        seen.add(fresh.id);
        const ele = cy.getElementById(fresh.id);
        if (ele.nonempty()) {
          const parent = fresh.parent || null;
          const data = { ...fresh };
          delete data.parent; // a parent is changed with move(), not data()
          ele.data(data);
          const now = ele.parent().nonempty() ? ele.parent().id() : null;
          if (now !== parent) moved.push([ele, parent]);
        } else added.push({ group: "nodes", data: fresh });
      }
      for (const e of graph.edges) {
        seen.add(e.id);
        const ele = cy.getElementById(e.id);
        if (ele.nonempty()) ele.data(edgeData(e));
        else added.push({ group: "edges", data: edgeData(e) });
      }
      if (added.length) cy.add(added);
    });
    // Moves before removals: removing a group that went away takes whatever is still inside.
    for (const [ele, parent] of moved) ele.move({ parent });
    cy.elements()
      .filter((ele) => !seen.has(ele.id()))
      .remove();
    if (moved.length || added.some((el) => el.group === "nodes")) {
      positions = null;
      arrange();
      applyFilter(true);
    } else {
      applyFilter(false);
    }
    window.aqGraphRefreshes += 1;
    if (status) {
      const jobs = graph.edges.filter((e) => e.kind === "gateway_job").length;
      status.textContent =
        `${graph.nodes.length} queues, ${graph.edges.length - jobs} propagations` +
        ((graph.gateway_links || []).length ? `, ${jobs} gateway jobs` : "") +
        ((graph.sites || []).length ? `, ${graph.sites.length} sites` : "") +
        ((graph.instances || []).length ? `, ${graph.instances.length} instances` : "") +
        "; " +
        `updated ${new Date().toLocaleTimeString()}.`;
    }
  }
  window.setInterval(refresh, Number(box.dataset.refreshMs || REFRESH_MS));
})();
