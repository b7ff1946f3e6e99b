// memtree explorer: both trees, loaded one page of children at a time from the JSON API beside
// this file (api/…). No framework, no request to any other origin. Every text shown comes from
// the memory, so it is only ever set with textContent, never parsed as HTML.
"use strict";

(() => {
  const PAGE = 100;
  const TREES = ["semantic", "temporal"];
  const fromAddress = readToken();
  const state = {
    ns: null,
    token: fromAddress.token,
    tokenProblem: fromAddress.problem,
    allowEdit: false,
    selected: null,
    pending: 0,
  };
  const panes = {};

  const $ = (selector, root = document) => root.querySelector(selector);

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "style") Object.assign(node.style, value); // CSSOM: allowed by the page's CSP
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  // A token is what an HTTP header can carry: visible ASCII, no spaces.
  function validToken(token) {
    return /^[\x21-\x7e]+$/.test(token);
  }

  // The token comes from the address's fragment (#token=…), which the browser never sends to a
  // server. A damaged one (a broken %-escape, characters no header can carry) is a problem to
  // show beside the token prompt; throwing here would leave a blank page.
  function readToken() {
    const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (!match) return { token: null, problem: null };
    let token;
    try {
      token = decodeURIComponent(match[1]);
    } catch (_) {
      return { token: null, problem: "The token in the page's address is damaged (a broken %-escape)." };
    }
    if (!validToken(token)) {
      return { token: null, problem: "The token in the page's address is not a valid token (only visible ASCII characters, no spaces)." };
    }
    return { token, problem: null };
  }

  // -- talking to the API ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.detail) || `the server answered ${status}`);
      this.status = status;
    }
  }

  function busy(delta) {
    state.pending += delta;
    document.documentElement.dataset.pending = String(state.pending);
  }

  async function api(path, params = {}, init = {}) {
    const url = new URL("api/" + path, document.baseURI);
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
    }
    const headers = { Accept: "application/json", ...(init.headers || {}) };
    if (state.token) headers.Authorization = "Bearer " + state.token;
    busy(+1);
    try {
      const response = await fetch(url, { ...init, headers, cache: "no-store" });
      let body = null;
      try {
        body = await response.json();
      } catch (_) {
        body = null;
      }
      if (!response.ok) {
        if (response.status === 401) askForToken();
        throw new ApiError(response.status, body);
      }
      return body;
    } finally {
      busy(-1);
    }
  }

  function showBanner(message, isError = true) {
    const banner = $("#banner");
    banner.textContent = message;
    banner.classList.toggle("error", isError);
    banner.hidden = !message;
  }

  function report(error) {
    if (error instanceof ApiError && error.status === 401) return;
    showBanner(error.message || String(error));
  }

  function askForToken(problem = state.token ? "The access token was refused." : "") {
    $("#token-form").hidden = false;
    showBanner(problem);
    $("#token").focus();
  }

  // -- formatting -----------------------------------------------------------------------------------

  // Dates are shown whole and in words ("Mar 2, 2026"), in UTC as the memory keeps them; the
  // same English words whatever the browser's language, so a date reads the same everywhere.
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  function date(iso) {
    const at = new Date(iso);
    return `${MONTHS[at.getUTCMonth()]} ${at.getUTCDate()}, ${at.getUTCFullYear()}`;
  }

  const moment = (iso) => (iso ? `${date(iso)} ${iso.slice(11, 16)}` : "");

  function dateRange(fromIso, toIso) {
    if (!fromIso) return "";
    if (!toIso || date(fromIso) === date(toIso)) return date(fromIso);
    const from = new Date(fromIso);
    const to = new Date(toIso);
    if (from.getUTCFullYear() !== to.getUTCFullYear()) return `${date(fromIso)} – ${date(toIso)}`;
    return `${MONTHS[from.getUTCMonth()]} ${from.getUTCDate()} – ${date(toIso)}`;
  }

  function lasting(seconds) {
    const units = [["day", 86400], ["hour", 3600], ["minute", 60]];
    for (const [unit, size] of units) {
      const amount = Math.round(seconds / size);
      if (amount >= 1 && (seconds >= size || unit === "minute")) return `${amount} ${unit}${amount === 1 ? "" : "s"}`;
    }
    return "under a minute";
  }

  const memories = (count) => `${count.toLocaleString()} ${count === 1 ? "memory" : "memories"}`;

  function span(item) {
    if (!item.time_from) return "";
    return item.kind === "leaf" ? moment(item.time_from) : dateRange(item.time_from, item.time_to);
  }

  function meta(item) {
    return item.kind === "leaf" ? span(item) : `${memories(item.leaf_count)} · ${span(item)}`;
  }

  // -- a tree pane: rows that load their children a page at a time ----------------------------------

  class Pane {
    constructor(tree, section) {
      this.tree = tree;
      this.section = section;
      this.list = $("ul.tree", section);
      this.status = $(".pane-status", section);
      this.reset();
    }

    reset() {
      this.nodes = new Map();
      this.list.replaceChildren();
      this.root = { id: null, pages: new Map(), loading: new Map(), total: null, childList: this.list };
      this.status.textContent = "";
    }

    async load() {
      await this.ensurePage(this.root, 0);
      if (this.root.total === 0) {
        this.status.textContent = `No memories in namespace '${state.ns}' yet. An agent stores them with the remember tool; from a shell: memtree-mcp remember "…"`;
      } else {
        this.status.textContent = `${this.memories.toLocaleString()} memories · ${this.root.total.toLocaleString()} top-level nodes`;
      }
    }

    entry(item) {
      let node = this.nodes.get(item.id);
      if (node) {
        node.item = item;
        markStale(node.li, item);
        return node;
      }
      const branch = item.child_count > 0;
      const li = el("li", {
        class: `node ${item.kind === "leaf" ? "node-leaf" : "node-branch"}`,
        role: "treeitem",
        "data-id": item.id,
        "aria-expanded": branch ? "false" : null,
      });
      node = { id: item.id, item, li, childList: null, expanded: false, pages: new Map(), loading: new Map(), total: null };
      const toggle = el("button", {
        class: "toggle",
        type: "button",
        text: branch ? "▸" : "•",
        "aria-label": branch ? "expand" : null,
        disabled: !branch,
        onclick: () => this.toggle(node).catch(report),
      });
      const label = el("button", {
        class: "label",
        type: "button",
        text: item.label,
        title: item.label,
        onclick: () => select(item.id).catch(report),
      });
      li.append(el("div", { class: "row" }, toggle, label, el("span", { class: "meta", text: meta(item), title: item.kind === "leaf" ? item.time_from : `${item.time_from} → ${item.time_to}` })));
      markStale(li, item);
      node.toggleButton = toggle;
      this.nodes.set(item.id, node);
      return node;
    }

    ensurePage(node, page) {
      if (node.pages.has(page)) return Promise.resolve();
      if (node.loading.has(page)) return node.loading.get(page);
      const params = { ns: state.ns, tree: this.tree, node: node.id, offset: page * PAGE, limit: PAGE };
      const loading = api("children", params)
        .then((data) => {
          node.total = data.total;
          if (node === this.root) this.memories = data.memories;
          node.pages.set(page, data.children.map((item) => this.entry(item).item.id));
          this.renderChildren(node);
        })
        .finally(() => node.loading.delete(page));
      node.loading.set(page, loading);
      return loading;
    }

    renderChildren(node) {
      const items = [];
      const pages = Math.ceil((node.total || 0) / PAGE);
      for (let page = 0; page < pages; ) {
        if (node.pages.has(page)) {
          for (const id of node.pages.get(page)) items.push(this.nodes.get(id).li);
          page += 1;
          continue;
        }
        let end = page;
        while (end < pages && !node.pages.has(end)) end += 1;
        const missing = Math.min(end * PAGE, node.total) - page * PAGE;
        const first = page;
        items.push(
          el("li", { class: "more-row", role: "none" },
            el("button", {
              class: "more",
              type: "button",
              text: `show ${Math.min(PAGE, missing)} more (${missing.toLocaleString()} not shown)`,
              onclick: () => this.ensurePage(node, first).catch(report),
            })),
        );
        page = end;
      }
      node.childList.replaceChildren(...items);
    }

    async expand(node) {
      if (!node.childList) {
        node.childList = el("ul", { role: "group" });
        node.li.append(node.childList);
      }
      node.expanded = true;
      node.childList.hidden = false;
      node.li.setAttribute("aria-expanded", "true");
      node.toggleButton.textContent = "▾";
      node.toggleButton.setAttribute("aria-label", "collapse");
      await this.ensurePage(node, 0);
    }

    collapse(node) {
      node.expanded = false;
      if (node.childList) node.childList.hidden = true;
      node.li.setAttribute("aria-expanded", "false");
      node.toggleButton.textContent = "▸";
      node.toggleButton.setAttribute("aria-label", "expand");
    }

    toggle(node) {
      if (node.expanded) {
        this.collapse(node);
        return Promise.resolve();
      }
      return this.expand(node);
    }

    // Unfold the tree along ``path`` (ancestors top down, then the node) and return the node's row.
    async reveal(path) {
      let parent = this.root;
      let node = null;
      for (const [position, step] of path.entries()) {
        await this.ensurePage(parent, Math.floor(step.index / PAGE));
        node = this.nodes.get(step.id);
        if (!node) return null; // the tree changed since the path was computed
        if (position < path.length - 1 && !node.expanded) await this.expand(node);
        parent = node;
      }
      return node;
    }

    mark(className, ids) {
      for (const row of this.list.querySelectorAll(`.${className}`)) row.classList.remove(className);
      for (const id of ids) {
        const node = this.nodes.get(id);
        if (node) node.li.classList.add(className);
      }
    }

    // Highlight search hits; ``ranks`` maps a node id to its place in the results (1 is the best).
    markHits(ranks) {
      for (const badge of this.list.querySelectorAll(".rank")) badge.remove();
      this.mark("hit", [...ranks.keys()]);
      for (const [id, rank] of ranks) {
        const node = this.nodes.get(id);
        if (!node) continue;
        node.li.classList.toggle("hit-best", rank === 1);
        const label = $(".label", node.li);
        label.before(el("span", { class: "rank", text: String(rank), title: `search result ${rank}` }));
      }
    }
  }

  // -- marks of memories a later one updates ---------------------------------------------------------

  // A memory that a later one updates is struck through in the tree, with a "superseded" badge
  // that opens its update; the mark follows the item each time the row is listed again.
  function markStale(li, item) {
    const stale = item.kind === "leaf" && Boolean(item.stale);
    li.classList.toggle("stale", stale);
    const row = li.querySelector(":scope > .row");
    const badge = row && row.querySelector(":scope > .stale-badge");
    if (badge) badge.remove();
    if (!stale || !row) return;
    row.querySelector(":scope > .label").after(el("button", {
      class: "stale-badge",
      type: "button",
      text: "superseded",
      title: "A later memory updates this one: click to open it",
      onclick: () => select(item.superseded_by, TREES).catch(report),
    }));
  }

  // "Superseded by <newer>" on a stale memory's panel, "Updates <older>, …" on its update's.
  function currencyNotes(node) {
    const notes = [];
    const ref = (other) => [link(other.id, other.label, TREES), el("span", { class: "muted", text: ` (${date(other.time)})` })];
    if (node.superseded_by) {
      notes.push(el("p", { class: "notice superseded" },
        el("strong", { text: "Superseded by " }), ...ref(node.superseded_by),
        el("span", { class: "muted", text: " — the later memory says what is current." })));
    }
    if (node.supersedes && node.supersedes.length) {
      const parts = [];
      for (const [position, older] of node.supersedes.entries()) {
        if (position) parts.push(el("span", { text: "; " }));
        parts.push(...ref(older));
      }
      notes.push(el("p", { class: "notice updates" }, el("strong", { text: "Updates " }), ...parts));
    }
    return notes;
  }

  // -- selection and the node panel ---------------------------------------------------------------

  function markSelected(id) {
    state.selected = id;
    for (const tree of TREES) panes[tree].mark("selected", id ? [id] : []);
    for (const segment of document.querySelectorAll(".segment")) {
      segment.classList.toggle("selected", segment.dataset.id === id);
      if (segment.dataset.id === id) segment.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  }

  async function select(id, revealIn = []) {
    const details = await api("node", { ns: state.ns, id });
    for (const tree of revealIn) {
      if (details.paths[tree]) {
        const node = await panes[tree].reveal(details.paths[tree]);
        if (node) node.li.scrollIntoView({ block: "nearest" });
      }
    }
    markSelected(id);
    renderPanel(details);
    return details;
  }

  function link(id, label, trees) {
    return el("button", { type: "button", text: label, title: id, onclick: () => select(id, trees).catch(report) });
  }

  function renderPanel(node) {
    const panel = $("#panel");
    const kind = node.kind === "leaf" ? "memory" : `summary · ${node.tree} tree`;
    const facts = el("dl");
    const fact = (name, value) => {
      if (value === null || value === undefined || value === "") return;
      facts.append(el("dt", { text: name }), el("dd", { text: String(value) }));
    };
    fact("id", node.id);
    if (node.kind !== "leaf") fact("memories", node.leaf_count.toLocaleString());
    if (node.kind === "leaf") {
      fact("time", `${moment(node.time_from)} UTC`);
    } else {
      fact("from", `${moment(node.time_from)} UTC`);
      fact("to", `${moment(node.time_to)} UTC`);
      fact("lasts", lasting(node.last_ts - node.first_ts));
    }
    fact("order", node.first_seq === node.last_seq ? `#${node.first_seq}` : `#${node.first_seq} to #${node.last_seq}`);
    if (node.kind === "leaf") {
      fact("role", node.role);
      fact("session", node.session);
      fact("tags", (node.tags || []).join(", "));
      fact("stored", node.created ? `${moment(node.created)} UTC` : null);
    }
    for (const tree of node.trees) fact(`depth (${tree})`, node.depths[tree]);

    const paths = el("div", { class: "crumbs-block" });
    for (const tree of node.trees) {
      const crumbs = el("div", { class: "crumbs" }, el("span", { class: "muted", text: `${tree}: ` }));
      const steps = node.paths[tree] || [];
      crumbs.append(el("span", { class: "muted", text: "root" }));
      for (const step of steps) {
        crumbs.append(el("span", { class: "sep", text: "›" }));
        crumbs.append(step.id === node.id ? el("span", { text: step.label }) : link(step.id, step.label, [tree]));
      }
      paths.append(crumbs);
    }

    const children = el("ul", { class: "links" });
    for (const child of node.children.items) {
      children.append(el("li", { class: child.stale ? "stale" : null }, link(child.id, child.label, node.tree ? [node.tree] : TREES),
        child.stale ? el("span", { class: "stale-mark", text: " superseded" }) : null,
        el("span", { class: "muted", text: ` · ${meta(child)}` })));
    }
    if (node.children.total > node.children.items.length) {
      children.append(el("li", { class: "muted", text: `and ${(node.children.total - node.children.items.length).toLocaleString()} more (expand the node in the tree)` }));
    }

    const actions = el("div", { class: "actions" });
    for (const tree of node.trees) {
      actions.append(el("button", {
        type: "button",
        text: `show in ${tree} tree`,
        onclick: () => select(node.id, [tree]).catch(report),
      }));
    }
    if (state.allowEdit && node.kind === "leaf") {
      actions.append(el("button", { type: "button", class: "danger", text: "forget this memory", onclick: () => forget(node).catch(report) }));
    }

    // replaceChildren would write a null as the text "null": a memory has no children to list.
    const parts = [
      el("h3", {}, el("span", { text: node.label }), el("span", { class: "kind", text: kind }),
        node.stale ? el("span", { class: "kind stale-kind", text: "superseded" }) : null),
      ...currencyNotes(node),
      facts,
      el("h2", { text: "path" }),
      paths,
      el("h2", { text: node.kind === "leaf" ? "memory" : "summary" }),
      el("div", { class: "text", text: node.text }),
      node.children.total ? el("h2", { text: `children (${node.children.total.toLocaleString()})` }) : null,
      node.children.total ? children : null,
      actions,
    ];
    panel.replaceChildren(...parts.filter((part) => part !== null));
  }

  async function forget(node) {
    const updates = (node.supersedes || []).length;
    const freed = updates ? `\n\nIt updates ${updates === 1 ? "an earlier memory" : `${updates} earlier memories`}: forgotten, it no longer marks ${updates === 1 ? "it" : "them"} superseded.` : "";
    if (!window.confirm(`Forget this memory for good?\n\n${node.text.slice(0, 300)}${freed}`)) return;
    await api("forget", {}, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ns: state.ns, id: node.id }),
    });
    await reload();
    const done = [el("p", { class: "muted", text: "The memory was forgotten; every summary above it was recomputed." })];
    if (updates) {
      const olders = [];
      for (const [position, older] of node.supersedes.entries()) {
        if (position) olders.push(el("span", { text: "; " }));
        olders.push(link(older.id, older.label, TREES));
      }
      done.push(el("p", { class: "notice updates" }, el("strong", { text: "No longer superseded by it: " }), ...olders));
    }
    $("#panel").replaceChildren(...done);
  }

  // -- search ---------------------------------------------------------------------------------------

  async function search(query) {
    const data = await api("search", { ns: state.ns, q: query, k: 10 });
    const list = $("#results-list");
    list.replaceChildren();
    $("#results").hidden = false;
    $("#clear-search").hidden = false;
    $("#results-count").textContent = data.hits.length ? `${data.hits.length} for “${query}”` : `nothing matches “${query}”`;
    const revealed = { semantic: new Map(), temporal: new Map() };
    const segments = new Set();
    // A stale hit names its update by rank (recall always returns it in the same result).
    const rank = new Map(data.hits.map((hit, position) => [hit.id, position + 1]));
    const updating = new Map();
    for (const hit of data.hits) {
      if (hit.superseded_by && rank.has(hit.superseded_by)) {
        updating.set(hit.superseded_by, [...(updating.get(hit.superseded_by) || []), rank.get(hit.id)]);
      }
    }
    for (const hit of data.hits) {
      const newer = hit.superseded_by ? rank.get(hit.superseded_by) : null;
      const marks = [];
      if (hit.superseded_by) {
        marks.push(el("span", { class: "stale-mark", text: newer ? `superseded by #${newer}` : "superseded by a later memory" }));
      }
      if (updating.has(hit.id)) {
        marks.push(el("span", { class: "update-mark", text: `updates ${updating.get(hit.id).map((r) => `#${r}`).join(", ")}` }));
      }
      list.append(el("li", { class: hit.superseded_by ? "stale" : null, "data-id": hit.id },
        el("button", { type: "button", text: hit.label, title: hit.text, onclick: () => select(hit.id, Object.keys(hit.paths)).catch(report) }),
        el("div", { class: "score", text: `${hit.kind === "leaf" ? "memory" : "summary"} · relevance ${hit.relevance.toFixed(2)} · ${dateRange(hit.time_from, hit.time_to)}` }, ...marks)));
      for (const step of hit.paths.temporal || []) segments.add(step.id);
    }
    // Unfold every hit's path in both trees at once: a page of children that two paths share is
    // requested once (Pane.ensurePage keeps the request in flight), so this stays a few dozen calls.
    const unfolding = [];
    for (const [position, hit] of data.hits.entries()) {
      for (const [tree, path] of Object.entries(hit.paths)) {
        unfolding.push(panes[tree].reveal(path).then((node) => {
          if (node) revealed[tree].set(hit.id, position + 1);
        }));
      }
    }
    await Promise.all(unfolding);
    for (const tree of TREES) {
      const ranks = new Map([...revealed[tree]].sort((a, b) => a[1] - b[1]));
      panes[tree].markHits(ranks);
      const [first] = ranks.keys();
      if (first) panes[tree].nodes.get(first).li.scrollIntoView({ block: "nearest" });
    }
    let first = null;
    for (const segment of document.querySelectorAll(".segment")) {
      segment.classList.toggle("hit", segments.has(segment.dataset.id));
      if (!first && segments.has(segment.dataset.id)) first = segment;
    }
    if (first) first.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  function clearSearch() {
    $("#results").hidden = true;
    $("#clear-search").hidden = true;
    $("#query").value = "";
    for (const tree of TREES) panes[tree].markHits(new Map());
    for (const segment of document.querySelectorAll(".segment.hit")) segment.classList.remove("hit");
  }

  // -- the timeline ---------------------------------------------------------------------------------

  // One card a session (a coarser period for a long memory), oldest first, each wide enough to
  // read: its label, its dates and how
  // many memories it holds. Cards share the width by memory count above a minimum width, and the
  // strip scrolls sideways when they do not all fit.
  async function loadTimeline() {
    const data = await api("timeline", { ns: state.ns });
    const track = $("#timeline-track");
    track.replaceChildren();
    if (!data.segments.length) {
      $("#timeline-note").textContent = "nothing remembered yet";
      return;
    }
    for (const segment of data.segments) {
      const dates = dateRange(segment.time_from, segment.time_to);
      track.append(el("button", {
        class: "segment",
        type: "button",
        "data-id": segment.id,
        style: { flexGrow: String(segment.leaf_count) },
        title: `${segment.label}\n${dates} · ${memories(segment.leaf_count)}`,
        onclick: () => select(segment.id, ["temporal"]).catch(report),
      },
      el("span", { class: "segment-label", text: segment.label }),
      el("span", { class: "segment-dates", text: dates }),
      el("span", { class: "segment-count", text: memories(segment.leaf_count) })));
    }
    const cards = `${data.segments.length} ${data.period}${data.segments.length === 1 ? "" : "s"}`;
    const note = `${cards} · ${memories(data.memories)} · ${dateRange(data.time_from, data.time_to)}`;
    $("#timeline-note").textContent = data.truncated ? `${note} (first ${data.segments.length} shown)` : note;
  }

  // -- start ----------------------------------------------------------------------------------------

  async function loadNamespaces() {
    const data = await api("namespaces");
    state.allowEdit = data.allow_edit;
    const wanted = new URLSearchParams(location.search).get("ns");
    const names = data.namespaces.map((n) => n.name);
    state.ns = state.ns || (wanted && names.includes(wanted) ? wanted : data.default);
    const picker = $("#namespace");
    picker.replaceChildren(...data.namespaces.map((n) =>
      el("option", { value: n.name, text: `${n.name} (${n.memories.toLocaleString()})`, selected: n.name === state.ns })));
    const mode = $("#mode");
    mode.textContent = state.allowEdit ? "editing on" : "read-only";
    mode.classList.toggle("edit", state.allowEdit);
  }

  async function reload() {
    for (const tree of TREES) panes[tree].reset();
    $("#results").hidden = true;
    markSelected(null);
    await Promise.all([...TREES.map((tree) => panes[tree].load()), loadTimeline()]);
  }

  async function start() {
    showBanner("");
    $("#token-form").hidden = true;
    if (state.tokenProblem) {
      askForToken(state.tokenProblem);
      return;
    }
    await loadNamespaces();
    await reload();
    document.documentElement.dataset.ready = "true";
  }

  function wire() {
    for (const section of document.querySelectorAll(".pane")) panes[section.dataset.tree] = new Pane(section.dataset.tree, section);
    for (const button of document.querySelectorAll(".switch button")) {
      button.addEventListener("click", () => {
        for (const other of document.querySelectorAll(".switch button")) other.classList.toggle("on", other === button);
        $("#trees").className = `trees view-${button.dataset.view}`;
      });
    }
    $("#search").addEventListener("submit", (event) => {
      event.preventDefault();
      const query = $("#query").value.trim();
      if (query) search(query).catch(report);
      else clearSearch();
    });
    $("#clear-search").addEventListener("click", clearSearch);
    $("#namespace").addEventListener("change", (event) => {
      state.ns = event.target.value;
      clearSearch();
      $("#panel").replaceChildren(el("p", { class: "muted", text: "Select a node to see its full text, time span and children." }));
      reload().catch(report);
    });
    $("#token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const token = $("#token").value.trim();
      if (token && !validToken(token)) {
        askForToken("That is not a valid token (only visible ASCII characters, no spaces).");
        return;
      }
      state.token = token || null;
      state.tokenProblem = null;
      history.replaceState(null, "", state.token ? `#token=${encodeURIComponent(state.token)}` : location.pathname + location.search);
      start().catch(report);
    });
    start().catch(report);
  }

  wire();
})();
