/* nlsim report page, review panel: editors mark pairs with the rubric's levels; the marks are kept in this
   browser (localStorage, keyed by the report's run id) and exported as the editors' file that
   `nlsim annotate merge` reads. No network; titles are set with textContent, never as markup. */
(function () {
  "use strict";
  var R = window.nlsimReport;
  var panel = document.getElementById("review");
  if (!R || !panel) return;
  var DATA = R.data, items = DATA.items, META = DATA.review;
  var KEY = "nlsim-review:" + (META.runId || location.pathname);
  var NAME_KEY = "nlsim-review:annotator", LEVELS_KEY = "nlsim-review:levels";
  var LEVELS = META.levels;  // [{v, key, label, title}], most related first
  var BY_KEY = {};
  LEVELS.forEach(function (l) { BY_KEY[l.key] = l.v; });
  var index = {};
  items.forEach(function (it, i) { index[it.id] = i; });
  var clusters = {};
  DATA.clusters.forEach(function (c) { clusters[c.cluster_id] = c; });
  var status = document.getElementById("rv-status");
  var EDITORS = DATA.editors || { scored: [], training: [], heldOut: [], decisions: [] };
  var SCORED = {};  // pair ids of the pairs an editor already scored: never offered in the queues again
  EDITORS.scored.forEach(function (id) { SCORED[id] = true; });
  var TRAINING = {}, HELD_OUT = {};  // of them, training pairs (a mark overrules) and held-out ones (never marked)
  (EDITORS.training || []).forEach(function (id) { TRAINING[id] = true; });
  (EDITORS.heldOut || []).forEach(function (id) { HELD_OUT[id] = true; });

  // --- the marks, kept in localStorage -----------------------------------------------------------------
  var memory = {}, kept = true;
  function storageGet(k) {
    try { return window.localStorage.getItem(k); } catch (e) { kept = false; return memory[k] || null; }
  }
  function storageSet(k, v) {
    try {
      if (v === null) window.localStorage.removeItem(k); else window.localStorage.setItem(k, v);
    } catch (e) {
      kept = false;
      memory[k] = v;
      say("This browser does not keep the marks (storage refused): export them before you close the page.");
    }
  }
  var marks = {};
  try { marks = (JSON.parse(storageGet(KEY) || "{}").marks) || {}; } catch (e) { marks = {}; }
  function save() { storageSet(KEY, JSON.stringify({ version: 1, marks: marks })); }
  function say(text) { status.textContent = text; }

  function cmpCodePoints(x, y) {  // the order of Python's sorted(): by code point, not by UTF-16 unit
    var a = Array.from(x), b = Array.from(y);
    for (var i = 0; i < Math.min(a.length, b.length); i++) {
      var d = a[i].codePointAt(0) - b[i].codePointAt(0);
      if (d) return d;
    }
    return a.length - b.length;
  }
  function pairKey(a, b) {
    var ids = [items[a].id, items[b].id].sort(cmpCodePoints);
    return ids[0] + "\u001f" + ids[1];
  }

  // --- SHA-256 in the page's own script (FIPS 180-4): crypto.subtle exists only in a secure context, and a
  // report served over plain HTTP from an intranet host is not one ----------------------------------------
  var SHA_K = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ];
  function sha256Hex(text) {  // lowercase hex SHA-256 of the UTF-8 bytes of text (Python: hashlib.sha256)
    var bytes = new TextEncoder().encode(text), n = bytes.length;
    var blocks = Math.ceil((n + 9) / 64), m = new Uint8Array(blocks * 64);
    m.set(bytes);
    m[n] = 0x80;
    var bits = n * 8, view = new DataView(m.buffer);
    view.setUint32(m.length - 8, Math.floor(bits / 0x100000000));
    view.setUint32(m.length - 4, bits >>> 0);
    var h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    var w = new Array(64);
    function rotr(x, r) { return (x >>> r) | (x << (32 - r)); }
    for (var off = 0; off < m.length; off += 64) {
      for (var t = 0; t < 16; t++) w[t] = view.getUint32(off + 4 * t);
      for (t = 16; t < 64; t++) {
        var s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >>> 3);
        var s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >>> 10);
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
      }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
      for (t = 0; t < 64; t++) {
        var t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[t] + w[t]) | 0;
        var t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        k = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
      h[4] = (h[4] + e) | 0; h[5] = (h[5] + f) | 0; h[6] = (h[6] + g) | 0; h[7] = (h[7] + k) | 0;
    }
    return h.map(function (x) { return ("0000000" + (x >>> 0).toString(16)).slice(-8); }).join("");
  }

  var pairIds = {};
  function pairIdOf(a, b) {  // nlsim.io.editor_file.pair_id of two items (indexes into the page's items)
    var k = pairKey(a, b);
    if (!pairIds[k]) pairIds[k] = "ed-" + sha256Hex(k).slice(0, 16);  // as pairId() below
    return pairIds[k];
  }
  function isScored(a, b) { return !!SCORED[pairIdOf(a, b)]; }
  function isHeldOut(a, b) { return !!HELD_OUT[pairIdOf(a, b)]; }
  function isTraining(a, b) { return !!TRAINING[pairIdOf(a, b)]; }

  // --- one row per pair to review ----------------------------------------------------------------------
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fixed(v) { return R.score(v); }  // the list's score format: the threshold's decimals
  function cell(i, cluster) {
    var td = el("td", "t");
    td.appendChild(R.title(i, true, true));  // whole: the editor judges the pair on it
    if (cluster !== undefined) td.appendChild(el("bdi", "rv-where", cluster ? cluster : "in no cluster"));  // an id is user text
    return td;
  }
  function reviewCell(tr) {
    var td = el("td", "rv");
    var box = el("span", "rv-levels");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "your verdict");
    LEVELS.forEach(function (l) {
      var b = el("button", "rv-level", l.label);
      b.type = "button";
      b.dataset.v = l.v;
      b.dataset.key = l.key;
      if (META.three.indexOf(l.v) < 0) b.dataset.extra = "1";
      b.title = l.title + " (key " + l.key + ")";
      b.setAttribute("aria-pressed", "false");
      b.addEventListener("click", function (e) {
        e.stopPropagation();
        current(tr);
        var m = marks[tr.dataset.key];
        mark(tr, m && m.v === l.v ? null : l.v);
      });
      box.appendChild(b);
    });
    td.appendChild(box);
    var note = el("input", "rv-note");
    note.type = "text";
    note.placeholder = "note";
    note.setAttribute("aria-label", "note on this pair");
    note.addEventListener("change", function () {
      var m = marks[tr.dataset.key];
      if (!m) return;
      note.value = note.value.replace(/[\t\r\n]+/g, " ");  // a cell of the TSV pair file holds none of them
      m.notes = note.value;
      m.exported = false;
      save();
      refresh();
    });
    td.appendChild(note);
    return td;
  }
  function reviewable(tr, a, b, src, score) {
    if (isHeldOut(a, b)) {  // a validation or test pair: it measures the model, an editor never decides it
      tr.classList.add("rv-scored", "rv-held");
      var why = el("td", "rv meta", "held out: no verdict here");
      why.title = "a validation or test pair: held out to measure the model, so it is never marked or overruled";
      tr.appendChild(why);
      return tr;
    }
    var overrule = isScored(a, b);
    if (overrule && !isTraining(a, b)) {  // scored, its split not known to this run: left as it is
      tr.classList.add("rv-scored");
      tr.appendChild(el("td", "rv meta", "already scored"));
      return tr;
    }
    tr.classList.add("rv-row");
    tr.dataset.a = a;
    tr.dataset.b = b;
    tr.dataset.src = src;
    tr.dataset.key = pairKey(a, b);
    if (score !== null && score !== undefined && score !== "") tr.dataset.score = score;
    if (overrule) tr.dataset.overrule = "1";  // a training pair an annotator scored: a mark overrules it
    tr.appendChild(reviewCell(tr));
    if (overrule) tr.lastChild.insertBefore(el("span", "rv-overrule", "scored by an annotator: your verdict overrules it"), tr.lastChild.firstChild);
    tr.addEventListener("click", function (e) {
      if (!e.target.closest("a, button, input")) current(tr);
    });
    paint(tr);
    return tr;
  }
  function paint(tr) {
    var m = marks[tr.dataset.key];
    tr.classList.toggle("rv-marked", !!m);
    if (m) tr.dataset.level = m.v; else delete tr.dataset.level;
    tr.querySelectorAll("button.rv-level").forEach(function (b) {
      var on = !!m && Number(b.dataset.v) === m.v;
      b.classList.toggle("on", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
    });
    var note = tr.querySelector("input.rv-note");
    if (note) {
      note.hidden = !m;
      if (m && document.activeElement !== note) note.value = m.notes || "";
    }
  }
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("tr.rv-row")); }
  function refresh() {
    rows().forEach(paint);
    var all = Object.keys(marks), fresh = all.filter(function (k) { return !marks[k].exported; });
    document.getElementById("rv-count").textContent =
      all.length + " marked" + (all.length ? " · " + fresh.length + " not exported yet" : "");
    document.getElementById("rv-export").disabled = !fresh.length;
    document.getElementById("rv-export-all").disabled = !all.length;
    document.getElementById("rv-clear").disabled = !all.length;
    var box = document.getElementById("rv-marked");
    box.querySelector("summary").textContent = "Your marks (" + all.length + ")";
    if (box.open) drawMarked();
  }
  function mark(tr, v) {
    var key = tr.dataset.key;
    if (v === null) {
      delete marks[key];
    } else {
      var a = Number(tr.dataset.a), b = Number(tr.dataset.b), old = marks[key];
      marks[key] = {
        a: items[a].id, b: items[b].id, v: v, src: old ? old.src : tr.dataset.src,
        score: tr.dataset.score === undefined ? null : Number(tr.dataset.score),
        notes: old ? old.notes || "" : "", at: new Date().toISOString(), exported: false,
        overrule: tr.dataset.overrule === "1",
        ta: String(items[a].title), tb: String(items[b].title),  // exported even from a page without the items
      };
    }
    save();
    refresh();
    if (preview()) R.redraw();
  }

  // --- the preview: a "not the same story" mark splits its cluster in this page at once ----------------
  var ORIGINAL = DATA.clusters.slice();
  // the preview groups a cluster's items (or the items a join brings together) as the run's story rule does
  // (rules.js, a port of nlsim.clusters.rules) on the links the page holds, with the editors' verdicts the
  // report honours (its decisions) and the marks (a mark on a decided pair stands in for the decision)
  var RULE = DATA.rule || { name: "components", cut: "order" };
  var COPIES = DATA.copies || {};  // each exact copy's representative (indexes)
  var DECIDED = {};
  EDITORS.decisions.forEach(function (d) { DECIDED[pairKey(d.a, d.b)] = [d.a, d.b, d.score]; });
  function verdictsAmong(inside, marked) {  // {must, cannot}: the verdicts on two items of inside (indexes)
    var all = {};
    Object.keys(DECIDED).forEach(function (k) { all[k] = DECIDED[k]; });
    if (marked) Object.keys(marks).forEach(function (k) {
      var m = marks[k], a = index[m.a], b = index[m.b];
      if (a !== undefined && b !== undefined) all[pairKey(a, b)] = [a, b, m.v];
    });
    var out = { must: [], cannot: [] };
    Object.keys(all).forEach(function (k) {
      var v = all[k];
      if (inside[v[0]] && inside[v[1]]) (v[2] >= 1 ? out.must : out.cannot).push([v[0], v[1]]);
    });
    return out;
  }
  // the links the cluster rule left between two clusters, or between a cluster and an item of none: the near
  // misses at or above the threshold (the run's rule read them as links too)
  var LEFT_APART = META.threshold === null || META.threshold === undefined ? [] : DATA.nearMisses.filter(
    function (p) { return p.similarity !== null && p.similarity >= META.threshold; });
  function ruleGroups(parts, inside) {  // the groups (indexes, 2 items or more) of the parts' items and links
    var links = [];
    parts.forEach(function (c) {
      c.pairs.forEach(function (p) {
        if (p.similarity !== null) links.push([items[p.id_a].id, items[p.id_b].id, p.similarity]);
      });
    });
    LEFT_APART.forEach(function (p) {
      if (inside[p.id_a] && inside[p.id_b]) links.push([items[p.id_a].id, items[p.id_b].id, p.similarity]);
    });
    function ids(ps) { return ps.map(function (p) { return [items[p[0]].id, items[p[1]].id]; }); }
    function copiesOf(v) {  // the exact copies among them, each read as its representative, and their links
      // (nlsim.clusters.copies): a "not the same story" between two copies puts them in groups of their own
      // (find_copies: earliest first, each copy in the first part none of whose members it is kept apart
      // from); a part's representative has the links of its group's, whose text it has (the run searches its
      // neighbours: a daily run too, a copy an earlier day read as its representative's searched again)
      var apart = {}, group = {}, repOf = {}, more = [];
      v.cannot.forEach(function (p) { apart[pairKey(p[0], p[1])] = true; });
      Object.keys(COPIES).forEach(function (i) {
        var r = COPIES[i];
        if (inside[i] && inside[r]) (group[r] = group[r] || [Number(r)]).push(Number(i));
      });
      Object.keys(group).forEach(function (r) {
        var cut = [];
        group[r].slice().sort(earliest).forEach(function (i) {
          var home = cut.filter(function (part) {
            return !part.some(function (m) { return apart[pairKey(i, m)]; });
          })[0];
          if (home) home.push(i); else cut.push([i]);
        });
        var was = items[r].id;
        cut.forEach(function (part) {
          var rep = items[part[0]].id;
          part.slice(1).forEach(function (m) { repOf[items[m].id] = rep; });
          if (rep === was) return;
          links.forEach(function (l) {
            if (l[0] === was) more.push([rep, l[1], l[2]]); else if (l[1] === was) more.push([l[0], rep, l[2]]);
          });
          more.push([was, rep, 1]);
        });
      });
      return { repOf: repOf, links: links.concat(more) };
    }
    function run(v) {
      var copies = copiesOf(v), verdicts = { must: ids(v.must), cannot: ids(v.cannot) };
      return window.nlsimRules.clusters(RULE, copies.links, verdicts, copies.repOf, RULE.cut || "order", arrival())
        .map(function (g) { return g.map(function (id) { return index[id]; }); });
    }
    var verdicts = verdictsAmong(inside, true), groups = run(verdicts), placed = {}, before = {}, apart = {};
    groups.forEach(function (g) { g.forEach(function (i) { placed[i] = true; }); });
    run(verdictsAmong(inside, false)).forEach(function (g) { g.forEach(function (i) { before[i] = true; }); });
    verdicts.cannot.forEach(function (p) {
      (apart[p[0]] = apart[p[0]] || {})[p[1]] = true;
      (apart[p[1]] = apart[p[1]] || {})[p[0]] = true;
    });
    // a member the rule leaves alone even without the marks is held by links the page does not have (a daily
    // run's older links, links to items of no cluster): it stays with the representative, unless a verdict
    // keeps it apart from one of them
    parts.forEach(function (c) {
      var home = groups.filter(function (g) { return g.indexOf(c.representative) >= 0; })[0];
      c.member_ids.forEach(function (i) {
        if (placed[i] || before[i] || i === c.representative) return;
        if (!home) { home = [c.representative]; placed[c.representative] = true; groups.push(home); }
        if (home.some(function (j) { return apart[i] && apart[i][j]; })) return;
        home.push(i);
        placed[i] = true;
      });
    });
    return groups.filter(function (g) { return g.length > 1; });
  }
  // the clusters columns made from their members' values or their links' scores, each by its declared
  // reduction (DATA.columns.clusters: reduce; nlsim.io.columns.REDUCE), as nlsim.clusters.table.cluster_row
  // makes them for clusters.parquet: a piece of a split cluster gets them again from its own members and
  // links (a value of an items column the page does not hold is unknown: null)
  var REDUCED = DATA.columns.clusters.filter(function (col) { return col.shown && col.reduce; });
  var HELD = {};
  DATA.columns.items.forEach(function (col) { if (col.shown) HELD[col.name] = true; });
  function present(values) { return values.filter(function (v) { return v !== null && v !== undefined && v !== ""; }); }
  function order(x, y) { return typeof x === "number" ? x - y : x < y ? -1 : x > y ? 1 : 0; }
  function weakestLink(links) {  // the lowest score on the strongest spanning forest (weakest_link in Python)
    var root = {}, weakest = null;
    function find(x) { if (root[x] === undefined) root[x] = x; while (root[x] !== x) { root[x] = root[root[x]]; x = root[x]; } return x; }
    links.slice().sort(function (x, y) { return y[2] - x[2]; }).forEach(function (l) {
      var ra = find(l[0]), rb = find(l[1]);
      if (ra !== rb) { root[ra] = rb; weakest = l[2]; }
    });
    return weakest;
  }
  var ITEM_REDUCE = {  // v(i): the value of item i; p: the piece
    representative: function (v, p) { return v(p.representative); },
    all: function (v, p) { return p.member_ids.map(v); },
    added: function (v, p) { return p.added_ids.map(v); },
    distinct: function (v, p) {
      var seen = {};
      present(p.member_ids.map(v)).forEach(function (x) { seen[x] = true; });
      return Object.keys(seen).sort(cmpCodePoints);
    },
    min: function (v, p, cmp) { var x = present(p.member_ids.map(v)).sort(cmp); return x.length ? x[0] : null; },
    max: function (v, p, cmp) { var x = present(p.member_ids.map(v)).sort(cmp); return x.length ? x[x.length - 1] : null; },
  };
  var LINK_REDUCE = {  // links: [a, b, score] inside the piece
    max: function (links) { return links.length ? Math.max.apply(null, links.map(function (l) { return l[2]; })) : null; },
    mean: function (links) {
      return links.length ? links.reduce(function (t, l) { return t + l[2]; }, 0) / links.length : null;
    },
    weakest: weakestLink,
  };
  function reduced(col, p) {
    if (col.source === "score") {
      var links = p.pairs.filter(function (q) { return q.similarity !== null; })
        .map(function (q) { return [q.id_a, q.id_b, q.similarity]; });
      return LINK_REDUCE[col.reduce](links);
    }
    var field = col.source.slice("item.".length);
    if (field !== "id" && !HELD[field]) return null;
    var cmp = col.format === "time" ? R.timeCmp : order;  // times by their instants in a repeated hour
    return ITEM_REDUCE[col.reduce](function (i) { return field === "id" ? i : items[i][field]; }, p, cmp);
  }
  function piece(c, members, keep) {
    var inP = {};
    members.forEach(function (i) { inP[i] = true; });
    var p = Object.assign({}, c, {  // the cluster rule's own columns: a new piece is named by its earliest item
      cluster_id: keep ? c.cluster_id : "c-" + items[members[0]].id, size: members.length, member_ids: members,
      representative: inP[c.representative] ? c.representative : members[0],
      added_ids: c.added_ids.filter(function (i) { return inP[i]; }), absorbed: keep ? c.absorbed : [],
      pairs: c.pairs.filter(function (q) { return inP[q.id_a] && inP[q.id_b]; }),
      preview: keep ? "split by your mark (preview)" : "split off by your mark (preview)", _hay: undefined,
    });
    REDUCED.forEach(function (col) { p[col.name] = reduced(col, p); });
    return p;
  }
  // --- the preview of a join: "same story" marks between two clusters (or a cluster and an item of none)
  // join them as the run's story rule would (ruleGroups: the clusters' links, the verdicts among their items)
  var ARRIVAL = null;
  function arrival() {  // each item's rank under the order rule (by id), which settles the rule's exact ties
    if (ARRIVAL) return ARRIVAL;  // as the run does (nlsim.clusters.rules: order), as a daily run met them
    ARRIVAL = {};
    items.map(function (_, i) { return i; }).sort(earliest).forEach(function (i, n) { ARRIVAL[items[i].id] = n; });
    return ARRIVAL;
  }
  function earliest(x, y) {  // the order rule: earliest first, undated last, ties by id
    var tx = items[x].published_at || "\uffff", ty = items[y].published_at || "\uffff";
    return R.timeCmp(tx, ty) || cmpCodePoints(items[x].id, items[y].id);  // a repeated hour: by instants
  }
  function blank(members) {  // a cluster of items of no cluster: the clusters columns, nothing yet
    var c = { cluster_id: "c-" + items[members[0]].id, status: "new", absorbed: [], added_ids: [], pairs: [],
      representative: members[0], member_ids: members, size: members.length, bucket: "", period: null };
    DATA.columns.clusters.forEach(function (col) { if (!(col.name in c)) c[col.name] = null; });
    return c;
  }
  function joins() {  // the groups of clusters (and lone items) that "same story" marks join: [{keys}]
    var home = {}, root = {};
    ORIGINAL.forEach(function (c) { c.member_ids.forEach(function (i) { home[i] = c.cluster_id; }); });
    function key(i) { return home[i] !== undefined ? "c:" + home[i] : "i:" + i; }
    function find(k) {
      if (root[k] === undefined) root[k] = k;
      while (root[k] !== k) { root[k] = root[root[k]]; k = root[k]; }
      return k;
    }
    Object.keys(marks).forEach(function (k) {
      var m = marks[k], a = index[m.a], b = index[m.b];
      if (a === undefined || b === undefined) return;
      if (m.v >= 1 && key(a) !== key(b)) root[find(key(a))] = find(key(b));
    });
    var groups = {};
    Object.keys(root).forEach(function (k) { (groups[find(k)] = groups[find(k)] || []).push(k); });
    return Object.keys(groups).filter(function (g) { return groups[g].length > 1; }).map(function (g) {
      return { keys: groups[g] };
    });
  }
  // what the run's rule may join to a cluster besides the cluster's own links: the links it left apart, and
  // the editors' same-story verdicts (one that another verdict overruled joins once a mark takes that back)
  var REACH = LEFT_APART.map(function (p) { return [p.id_a, p.id_b]; }).concat(EDITORS.decisions
    .filter(function (d) { return d.score >= 1; }).map(function (d) { return [d.a, d.b]; }));
  function around(c, byId) {  // the keys of c and of what REACH reaches from it (joins' keys)
    var home = {}, keys = {}, todo = c.member_ids.slice(), inside = {};
    ORIGINAL.forEach(function (o) { o.member_ids.forEach(function (i) { home[i] = o; }); });
    keys["c:" + c.cluster_id] = true;
    c.member_ids.forEach(function (i) { inside[i] = true; });
    while (todo.length) {
      var i = todo.pop();
      REACH.forEach(function (p) {
        var other = p[0] === i ? p[1] : p[1] === i ? p[0] : undefined;
        if (other === undefined || inside[other]) return;
        var o = home[other];
        keys[o ? "c:" + o.cluster_id : "i:" + other] = true;
        (o ? o.member_ids : [other]).forEach(function (m) { if (!inside[m]) { inside[m] = true; todo.push(m); } });
      });
    }
    return Object.keys(keys).filter(function (k) { return k.charAt(0) === "i" || byId[k.slice(2)]; });
  }
  function keyMember(c) {  // a cluster's earliest member, whose id its id is
    return c.member_ids.slice().sort(earliest)[0];
  }
  function markedApart(c) {  // whether a mark below "same story" falls on two items of cluster c
    var inC = {};
    c.member_ids.forEach(function (i) { inC[i] = true; });
    return Object.keys(marks).some(function (k) {
      var m = marks[k], a = index[m.a], b = index[m.b];
      return a !== undefined && b !== undefined && inC[a] && inC[b] && m.v < 1;
    });
  }
  function nameGroups(groups, parts) {  // the id each group (indexes, 2 or more) takes, as the run names them
    // (nlsim.clusters.assign): each claim, earliest anchor first, names the group it is for: a cluster's id
    // for the group holding its key member (in a daily run, for a cluster a mark splits, the group holding
    // most of its members, ties the key member's), an old item's would-be id ("c-" + its id) for its group
    // when its cluster's claim is another group's (a daily run's items of today claim none); a group no
    // claim named takes the would-be id of its earliest item that is free. A batch report: each cluster is
    // named by its earliest item
    var groupOf = {}, clusterOf = {}, today = {}, held = {}, claims = [], names = [], used = {};
    groups.forEach(function (g, n) { g.forEach(function (i) { groupOf[i] = n; }); });
    parts.forEach(function (c) {
      c.member_ids.forEach(function (i) { clusterOf[i] = c.cluster_id; });
      if (DATA.daily) c.added_ids.forEach(function (i) { today[i] = true; });
      var key = keyMember(c), home = groupOf[key];
      if (DATA.daily && markedApart(c)) {
        var count = {}, best;
        c.member_ids.forEach(function (i) { if (groupOf[i] !== undefined) count[groupOf[i]] = (count[groupOf[i]] || 0) + 1; });
        Object.keys(count).map(Number).sort(function (x, y) { return x - y; }).forEach(function (g) {
          if (best === undefined || count[g] > count[best] || (count[g] === count[best] && g === home)) best = g;
        });
        home = best;
      }
      if (home !== undefined) { held[c.cluster_id] = home; claims.push([key, c.cluster_id, home]); }
    });
    Object.keys(groupOf).map(Number).forEach(function (i) {
      var own = "c-" + items[i].id;
      if (!today[i] && held[clusterOf[i]] !== groupOf[i] && held[own] === undefined) claims.push([i, own, groupOf[i]]);
    });
    claims.sort(function (x, y) { return earliest(x[0], y[0]) || cmpCodePoints(x[1], y[1]); });
    claims.forEach(function (c) {
      if (names[c[2]] === undefined && !used[c[1]]) { names[c[2]] = c[1]; used[c[1]] = true; }
    });
    groups.forEach(function (g, n) {
      g.slice().sort(earliest).some(function (i) {
        var id = "c-" + items[i].id;
        if (names[n] !== undefined || used[id]) return names[n] !== undefined;
        names[n] = id;
        used[id] = true;
        return true;
      });
    });
    return names;
  }
  function joined(j, byId) {  // the clusters the rule makes of one join's clusters, lone items and marks
    var parts = j.keys.map(function (k) { return k.charAt(0) === "c" ? byId[k.slice(2)] : null; });
    var lone = j.keys.filter(function (k) { return k.charAt(0) === "i"; }).map(function (k) { return Number(k.slice(2)); });
    var from = {}, inside = {};
    parts.forEach(function (c) { if (c) c.member_ids.forEach(function (i) { from[i] = c; inside[i] = true; }); });
    lone.forEach(function (i) { inside[i] = true; });
    var groups = ruleGroups(parts.filter(Boolean), inside).filter(function (g) { return g.length > 1; });
    var names = nameGroups(groups, parts.filter(Boolean));
    var out = [];
    groups.forEach(function (g, n) {
      g.sort(earliest);
      var mine = [];
      parts.forEach(function (c) { if (c && g.some(function (i) { return from[i] === c; })) mine.push(c); });
      mine.sort(function (x, y) { return earliest(keyMember(x), keyMember(y)); });
      var named = mine.filter(function (c) { return c.cluster_id === names[n]; })[0];
      var base = named || (mine.length ? mine[0] : blank(g));
      var merged = Object.assign({}, base, {
        pairs: [].concat.apply([], mine.map(function (c) { return c.pairs; }))
          .concat(j.split || j.regroup ? LEFT_APART : []),
        added_ids: [].concat.apply([], mine.map(function (c) { return c.added_ids; })),
      });
      var p = piece(merged, g, !!named);
      p.cluster_id = names[n];
      var others = mine.filter(function (c) { return c.cluster_id !== p.cluster_id; }).map(function (c) { return c.cluster_id; });
      var grew = mine.length > 1 || g.some(function (i) { return !from[i]; }) || !mine.length;
      if (grew && j.split) {  // a piece a "not the same story" mark split off, that links left apart now hold
        p.joined = others.filter(function (o) { return o !== j.split; });
        p.preview = "regrouped after your mark split " + j.split + (p.joined.length ? ", with " + p.joined.join(", ") : "") + " (preview)";
      } else if (grew) {
        p.joined = others;
        p.preview = "joined by your mark" + (others.length ? " with " + others.join(", ") : "") + " (preview)";
      } else if (named && g.length === named.size) {
        p = named;  // the cluster as it was
      }
      out.push(p);
    });
    return out;
  }
  function preview() {  // DATA.clusters from the report's clusters and the marks; whether anything changed
    var out = [], byId = {}, done = {};
    ORIGINAL.forEach(function (c) { byId[c.cluster_id] = c; });
    if (window.nlsimRules) {
      // a join may part a cluster it takes in (a mark inside it, or one between the join's items): the pieces
      // may join what the rule left apart from the cluster, as a split's do (regrouped below), so the rule runs
      // over what the links left apart reach from each of its clusters too; joins that reach one another are
      // one run of the rule
      var all = [];
      joins().forEach(function (j) {
        var keys = j.keys.slice(), regroup = false;
        j.keys.forEach(function (k) {
          if (k.charAt(0) === "c") around(byId[k.slice(2)], byId).forEach(function (r) {
            if (keys.indexOf(r) < 0) { keys.push(r); regroup = true; }
          });
        });
        var met = all.filter(function (o) { return o.keys.some(function (k) { return keys.indexOf(k) >= 0; }); });
        met.forEach(function (o) {
          o.keys.forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); });
          all.splice(all.indexOf(o), 1);
        });
        all.push({ keys: keys, regroup: regroup || met.length > 0 });
      });
      all.forEach(function (j) {
        j.keys.forEach(function (k) { if (k.charAt(0) === "c") done[k.slice(2)] = true; });
        Array.prototype.push.apply(out, joined(j, byId));
      });
    }
    // a split cluster's pieces may join what the rule left apart from it: the rule over all that its links
    // left apart reach, as the run (each cluster it reaches taken in before any is listed as it was)
    var regrouped = {};
    if (window.nlsimRules) ORIGINAL.forEach(function (c) {
      if (done[c.cluster_id] || !markedApart(c)) return;
      var reach = around(c, byId);
      if (reach.length < 2 || reach.some(function (k) { return done[k.slice(2)] && k.charAt(0) === "c"; })) return;
      reach.forEach(function (k) { if (k.charAt(0) === "c") done[k.slice(2)] = true; });
      regrouped[c.cluster_id] = joined({ keys: reach, split: c.cluster_id }, byId);
    });
    ORIGINAL.forEach(function (c) {
      if (regrouped[c.cluster_id]) Array.prototype.push.apply(out, regrouped[c.cluster_id]);
      if (done[c.cluster_id]) return;
      var inC = {}, at = {}, apart = markedApart(c);
      c.member_ids.forEach(function (i, k) { inC[i] = true; at[i] = k; });
      var parts = apart ? ruleGroups([c], inC) : [c.member_ids];
      if (parts.length === 1 && parts[0].length === c.member_ids.length) { out.push(c); return; }
      parts.forEach(function (p) { p.sort(function (x, y) { return at[x] - at[y]; }); });  // in member order
      parts.sort(function (x, y) {
        return (y.indexOf(c.representative) >= 0) - (x.indexOf(c.representative) >= 0) || y.length - x.length;
      });
      parts = parts.filter(function (p) { return p.length > 1; });
      var names = nameGroups(parts, [c]);
      parts.forEach(function (p, k) {
        var made = piece(c, p, names[k] === c.cluster_id);
        made.cluster_id = names[k];
        out.push(made);
      });
    });
    var changed = out.length !== DATA.clusters.length || out.some(function (c, k) { return c !== DATA.clusters[k]; });
    DATA.clusters.length = 0;
    Array.prototype.push.apply(DATA.clusters, out);
    clusters = {};
    DATA.clusters.forEach(function (c) { clusters[c.cluster_id] = c; });
    return changed;
  }

  // --- keyboard: next, previous, a key per level -------------------------------------------------------
  var cur = null;
  function visible() { return rows().filter(function (r) { return r.offsetParent !== null; }); }
  function current(tr) {
    if (cur) cur.classList.remove("rv-current");
    cur = tr;
    if (tr) {
      tr.classList.add("rv-current");
      tr.scrollIntoView({ block: "nearest" });
    }
  }
  function step(d) {
    var list = visible();
    if (!list.length) return;
    var k = cur ? list.indexOf(cur) : -1;
    current(list[k < 0 ? (d > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, k + d))]);
  }
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.isContentEditable || /^(input|textarea|select)$/i.test(t.tagName))) return;
    var k = e.key;
    if (k === "j" || k === "n") { step(1); e.preventDefault(); }
    else if (k === "k" || k === "p") { step(-1); e.preventDefault(); }
    else if (Object.prototype.hasOwnProperty.call(BY_KEY, k)) {
      if (!cur || cur.offsetParent === null) step(1);
      if (cur) { mark(cur, BY_KEY[k]); step(1); }
      e.preventDefault();
    } else if (k === "x" || k === "Delete" || k === "Backspace") {
      if (cur) mark(cur, null);
      e.preventDefault();
    }
  });

  // --- the near misses: a queue of their own, nearest the threshold first ------------------------------
  var near = DATA.nearMisses.filter(function (p) { return !isScored(p.id_a, p.id_b); }), nearShown = 0;
  var nearScored = DATA.nearMisses.length - near.length;
  var nearBody = document.querySelector("#rv-near tbody"), nearMore = document.getElementById("rv-near-more");
  function moreNear(n) {
    near.slice(nearShown, nearShown + n).forEach(function (p) {
      var tr = el("tr");
      tr.appendChild(el("td", "num", fixed(p.similarity)));
      tr.appendChild(cell(p.id_a, p.cluster_a));
      tr.appendChild(cell(p.id_b, p.cluster_b));
      nearBody.appendChild(reviewable(tr, p.id_a, p.id_b, "near-miss", p.similarity));
    });
    nearShown = Math.min(near.length, nearShown + n);
    nearMore.textContent = "";
    if (nearShown < near.length) {
      var b = el("button", null, "show " + Math.min(50, near.length - nearShown) + " more of " + near.length);
      b.type = "button";
      b.onclick = function () { moreNear(50); };
      nearMore.appendChild(b);
    }
    if (nearScored && nearShown === near.length)
      nearMore.appendChild(el("p", "meta", nearScored + " near miss(es) already scored by an editor, left out."));
    if (!near.length) nearBody.appendChild(el("tr")).appendChild(el("td", "meta", "No near miss to review in this report."))
      .colSpan = 4;
  }
  moreNear(50);

  // --- doubtful clusters first: each cluster's weakest unscored link, nearest the threshold first --------
  var doubtful = [];
  ORIGINAL.forEach(function (c) {
    var open = c.pairs.filter(function (p) { return p.similarity !== null && !isScored(p.id_a, p.id_b); });
    if (!open.length) return;
    var low = open.reduce(function (w, p) { return p.similarity < w.similarity ? p : w; }).similarity;
    var weak = c.weakest_link === null || c.weakest_link === undefined ? low : c.weakest_link;
    var weakest = open.reduce(function (w, p) {
      return Math.abs(p.similarity - weak) < Math.abs(w.similarity - weak) ? p : w;
    });
    doubtful.push({ c: c, p: weakest, weak: weak });  // the link the cluster would fall apart at
  });
  doubtful.sort(function (x, y) {
    return x.weak - y.weak || y.c.size - x.c.size || (x.c.cluster_id < y.c.cluster_id ? -1 : 1);
  });
  var doubtBody = document.querySelector("#rv-doubtful tbody"), doubtMore = document.getElementById("rv-doubtful-more");
  var doubtShown = 0;
  function moreDoubtful(n) {
    doubtful.slice(doubtShown, doubtShown + n).forEach(function (d) {
      var tr = el("tr"), td = tr.appendChild(el("td", "num", fixed(d.p.similarity)));  // the offered pair's score
      if (fixed(d.p.similarity) !== fixed(d.weak)) {  // the weakest link is not offered: its open link nearest it
        var held = d.c.pairs.some(function (p) { return p.similarity !== null && fixed(p.similarity) === fixed(d.weak); });
        td.appendChild(el("span", "meta rv-weak", " (weakest link " + fixed(d.weak) +
          (held ? " already scored)" : " not among this page's pairs)")));
      }
      tr.appendChild(cell(d.p.id_a, d.c.cluster_id + " (" + d.c.size + " items)"));
      tr.appendChild(cell(d.p.id_b, d.c.cluster_id));
      doubtBody.appendChild(reviewable(tr, d.p.id_a, d.p.id_b, "weakest-link", d.p.similarity));
    });
    doubtShown = Math.min(doubtful.length, doubtShown + n);
    doubtMore.textContent = "";
    if (doubtShown < doubtful.length) {
      var b = el("button", null, "show " + Math.min(50, doubtful.length - doubtShown) + " more of " + doubtful.length);
      b.type = "button";
      b.onclick = function () { moreDoubtful(50); };
      doubtMore.appendChild(b);
    }
    if (!doubtful.length) doubtBody.appendChild(el("tr")).appendChild(el("td", "meta", "No cluster link left to review."))
      .colSpan = 4;
  }
  moreDoubtful(20);

  var decisions = document.querySelector("#rv-decisions");
  decisions.querySelector("summary").textContent = "Editors’ decisions in this report (" + EDITORS.decisions.length + ")";
  EDITORS.decisions.forEach(function (d) {
    var said = d.overruled ? "same story: not joined (a “not the same story” verdict keeps them apart)"
      : d.score >= 1 ? "same story: joined" : "not the same story: kept apart";
    var tr = el("tr", d.score >= 1 && !d.overruled ? "rv-joined" : "rv-apart");
    var td = tr.appendChild(el("td", null, said));
    if (d.notes) td.appendChild(el("div", "rv-decision-note", "Editor’s note: ")).appendChild(el("bdi", null, d.notes));
    tr.appendChild(cell(d.a));
    tr.appendChild(cell(d.b));
    decisions.querySelector("tbody").appendChild(tr);
  });

  // --- the list of marks -------------------------------------------------------------------------------
  var marked = document.getElementById("rv-marked");
  function drawMarked() {
    var body = marked.querySelector("tbody");
    body.textContent = "";
    Object.keys(marks).sort(function (x, y) { return marks[y].at < marks[x].at ? -1 : 1; }).forEach(function (k) {
      var m = marks[k], a = index[m.a], b = index[m.b];
      if (a === undefined || b === undefined) return;
      var tr = el("tr");
      tr.appendChild(el("td", "num", fixed(m.score)));
      tr.appendChild(cell(a));
      tr.appendChild(cell(b));
      body.appendChild(reviewable(tr, a, b, m.src, m.score));
    });
  }
  marked.addEventListener("toggle", function () { if (marked.open) drawMarked(); });

  // --- picking two items, in one cluster or in two ----------------------------------------------------
  var picks = [];
  function drawPicked() {
    var box = document.getElementById("rv-picked"), body = document.getElementById("rv-picked-body");
    document.querySelectorAll("button.rv-pick").forEach(paintPick);
    body.textContent = "";
    box.hidden = picks.length < 2;
    if (picks.length === 2) {
      var tr = el("tr");
      tr.appendChild(el("td", "num", "–"));
      tr.appendChild(cell(picks[0], clusterOf(picks[0])));
      tr.appendChild(cell(picks[1], clusterOf(picks[1])));
      body.appendChild(reviewable(tr, picks[0], picks[1], "picked", null));
      current(tr);
    }
  }
  function paintPick(b) {
    var on = picks.indexOf(Number(b.dataset.item)) >= 0, text = on ? "picked" : "pick";
    b.classList.toggle("on", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
    if (b.textContent !== text) b.textContent = text;  // only on a change: the list's observer sees it
  }
  function clusterOf(i) {
    for (var id in clusters) if (clusters[id].member_ids.indexOf(i) >= 0) return id;
    return null;
  }
  function pick(i) {
    var k = picks.indexOf(i);
    if (k >= 0) picks.splice(k, 1);
    else picks = picks.length >= 2 ? [i] : picks.concat([i]);
    drawPicked();
  }

  // --- the rows of the cluster list (drawn by the list script as clusters are opened) ------------------------
  var LIMIT = 200, COUNTED = 20000;  // the other pairs shown; a cluster with more is not counted pair by pair
  function insidePairs(c, body) {
    var linked = {}, m = c.member_ids;
    c.pairs.forEach(function (p) { linked[pairKey(p.id_a, p.id_b)] = true; });
    var unlinked = m.length * (m.length - 1) / 2 - Object.keys(linked).length;
    if (unlinked <= 0) return;
    function others(limit) {  // the first limit pairs not linked and not scored (or a training pair)
      var out = [];
      for (var x = 0; x < m.length && out.length < limit; x++)
        for (var y = x + 1; y < m.length && out.length < limit; y++)
          if (!linked[pairKey(m[x], m[y])] && (!isScored(m[x], m[y]) || isTraining(m[x], m[y])))
            out.push({ a: m[x], b: m[y] });
      return out;
    }
    // a large cluster's pairs are not all hashed to be counted (a million pairs would hold the page for
    // seconds): its count is of the pairs no link joins, scored ones among them
    var n = unlinked <= COUNTED ? others(Infinity).length : null;
    if (n === 0) return;
    var d = el("details", "rv-inside");
    d.appendChild(el("summary", null, "The other pairs of its items (" +
      (n === null ? R.fmt(unlinked) + " not linked, some perhaps already scored" : R.fmt(n)) + "), to mark"));
    d.addEventListener("toggle", function () {
      if (!d.open || d.querySelector("table")) return;
      var t = el("table", "rv-table"), head = el("tr");
      ["item A", "item B", "your verdict"].forEach(function (h) { head.appendChild(el("th", null, h)); });
      t.appendChild(el("thead")).appendChild(head);
      var tb = t.appendChild(el("tbody")), shown = others(LIMIT + 1);
      shown.slice(0, LIMIT).forEach(function (p) {
        var tr = el("tr");
        tr.appendChild(cell(p.a));
        tr.appendChild(cell(p.b));
        tb.appendChild(reviewable(tr, p.a, p.b, "inside", null));
      });
      d.appendChild(t);
      if (shown.length > LIMIT)
        d.appendChild(el("p", "meta", "The first " + LIMIT + " shown: pick two items above to mark any other pair."));
    });
    body.appendChild(d);
  }
  function decorate(root) {
    root.querySelectorAll("tr[data-a]:not(.rv-row):not(.rv-scored)").forEach(function (tr) {
      var table = tr.closest("table"), head = table && table.querySelector("thead tr");
      if (head && !head.querySelector(".rv-head")) head.appendChild(el("th", "rv-head", "your verdict"));
      reviewable(tr, Number(tr.dataset.a), Number(tr.dataset.b), "reported", tr.dataset.score);
    });
    root.querySelectorAll("tr[data-item]:not(.rv-pickable)").forEach(function (tr) {
      tr.classList.add("rv-pickable");
      var i = Number(tr.dataset.item), td = el("td", "rv-pickcell"), b = el("button", "rv-pick", "pick");
      b.type = "button";
      b.dataset.item = i;
      b.title = "pick this item and another to mark the two";
      paintPick(b);
      b.addEventListener("click", function (e) { e.stopPropagation(); pick(i); });
      td.appendChild(b);
      tr.appendChild(td);
      var table = tr.closest("table"), head = table && table.querySelector("thead tr");
      if (head && !head.querySelector(".rv-head")) head.appendChild(el("th", "rv-head", ""));
    });
    root.querySelectorAll(".cbody:not(.rv-seen)").forEach(function (body) {
      body.classList.add("rv-seen");
      var li = body.closest("li.cluster"), c = li && clusters[li.dataset.cluster];
      if (c) insidePairs(c, body);
    });
  }
  var list = document.getElementById("clusters");
  if (list) {
    decorate(list);
    new MutationObserver(function () { decorate(list); }).observe(list, { childList: true, subtree: true });
  }

  // --- export: the editors' file of `nlsim annotate merge` --------------------------------------------
  function pairId(m) {  // nlsim.io.editor_file.pair_id: SHA-256 of the two ids in code point order
    var ids = [m.a, m.b].sort(cmpCodePoints);
    return "ed-" + sha256Hex(ids[0] + "\u001f" + ids[1]).slice(0, 16);
  }
  function sheetText(v) {  // nlsim.report.spreadsheet.csv_text: text a spreadsheet would run as a formula
    var text = v === null || v === undefined ? "" : String(v);
    var rest = text.replace(/^'+/, "");  // after any apostrophes: '=x is written ''=x
    var at = 0;  // and after spaces or characters that show nothing (nlsim.io.editor_file.runs_as_formula)
    while (at < rest.length && META.formulaBlanks.indexOf(rest.charAt(at)) >= 0) at++;
    var formula = function (start) { return start !== "" && META.formulaStart.indexOf(start) >= 0; };
    return formula(rest.charAt(0)) || formula(rest.charAt(at)) ? "'" + text : text;
  }
  function field(v) { return '"' + (v === null || v === undefined ? "" : String(v)).replace(/"/g, '""') + '"'; }
  var NUMBERS = { similarity: true, score: true, threshold: true };  // numbers stay numbers
  function texts(m) {  // the mark's two texts: its items' on this page, else those it was marked with
    var a = items[index[m.a]], b = items[index[m.b]];
    var ta = a ? String(a.title) : m.ta, tb = b ? String(b.title) : m.tb;
    return typeof ta === "string" && typeof tb === "string" ? [ta, tb] : null;
  }
  function exportRow(m, name, overrules) {  // one line: META.columns, META.hashColumns, marked_at[, overrule]
    var both = texts(m), textA = both[0], textB = both[1];
    var row = {
      pair_id: pairId(m), id_a: m.a, id_b: m.b, text_a: textA, text_b: textB,
      similarity: m.score === null ? "" : m.score, stratum: META.stratum + ":" + m.src, score: String(m.v),
      annotator: name, notes: m.notes || "", model: META.model,
      threshold: META.threshold === null ? "" : META.threshold,
    };
    var cells = META.columns.map(function (c) { return field(NUMBERS[c] ? row[c] : sheetText(row[c])); });
    cells = cells.concat([field(sha256Hex(textA)), field(sha256Hex(textB))]);
    cells.push(field(m.at));  // when the mark was made (ISO 8601, UTC): the newer of two decisions stands
    if (overrules) cells.push(field(m.overrule ? "true" : "false"));
    return cells.join(",");
  }
  function annotator() {
    var input = document.getElementById("rv-annotator");
    var name = input.value.trim();
    if (!name) {
      name = (window.prompt("Your name, for the annotator column of the export:") || "").trim();
      input.value = name;
      if (name) storageSet(NAME_KEY, name);
    }
    return name;
  }
  function exportMarks(all) {
    var keys = Object.keys(marks).filter(function (k) { return all || !marks[k].exported; });
    // a mark kept from another report of this run id (another rule, verdicts merged since) can name items
    // this page does not hold: without the texts it was marked with, it cannot be exported from here
    var away = keys.filter(function (k) { return !texts(marks[k]); }).length;
    keys = keys.filter(function (k) { return texts(marks[k]); });
    var awaySaid = away ? " " + away + " mark(s) left out: their items are not in this report (export them " +
      "from the report they were marked in)." : "";
    if (!keys.length) { say("No mark to export." + awaySaid); return; }
    if (!window.TextEncoder || !window.Blob || !window.URL) {
      say("This browser is too old to write the export (no TextEncoder, Blob or URL): open the page in a " +
          "current Chrome, Edge, Firefox or Safari.");
      return;
    }
    var name = annotator();
    if (!name) { say("The export needs your name (the annotator column)."); return; }
    keys.sort(function (x, y) { return marks[x].at < marks[y].at ? -1 : 1; });
    // the overrule column only when a mark overrules an annotator's score: else the export is as before
    var overrules = keys.some(function (k) { return marks[k].overrule; });
    var head = META.columns.concat(META.hashColumns, [META.markedColumn], overrules ? [META.overruleColumn] : []);
    var lines = [head.join(",")];
    keys.forEach(function (k) { lines.push(exportRow(marks[k], name, overrules)); });
    var blob = new Blob(["\ufeff" + lines.join("\r\n") + "\r\n"], { type: "text/csv;charset=utf-8" });
    var link = el("a");
    var stamp = new Date().toISOString().replace(/[-:]/g, "").slice(0, 15);
    link.href = URL.createObjectURL(blob);
    link.download = "marks-" + (META.runId || "report") + "-" + stamp + ".csv";
    document.body.appendChild(link);
    link.click();
    setTimeout(function () { URL.revokeObjectURL(link.href); link.remove(); }, 5000);
    keys.forEach(function (k) { marks[k].exported = true; });
    save();
    refresh();
    say("Exported " + keys.length + " mark(s) to " + link.download + ": merge it with nlsim annotate merge." +
      awaySaid);
  }
  document.getElementById("rv-export").addEventListener("click", function () { exportMarks(false); });
  document.getElementById("rv-export-all").addEventListener("click", function () { exportMarks(true); });
  document.getElementById("rv-clear").addEventListener("click", function () {
    var n = Object.keys(marks).length;
    if (!n || !window.confirm("Clear the " + n + " mark(s) of this report in this browser?")) return;
    marks = {};
    storageSet(KEY, null);
    refresh();
    if (preview()) R.redraw();  // the clusters the marks split or joined are as the report has them again
    say("Cleared " + n + " mark(s).");
  });

  // --- the rubric (a folded section of the page): every link to it opens it ---------------------------------
  function openRubric() {
    var d = document.getElementById("rubric-levels");
    if (d) d.open = true;
  }
  document.querySelectorAll("a[href='#rubric']").forEach(function (a) { a.addEventListener("click", openRubric); });
  if (location.hash === "#rubric") openRubric();
  window.nlsimReview = { sha256Hex: sha256Hex, pairId: pairId, sheetText: sheetText };  // for checks

  // --- settings: the annotator's name (asked once), three or five levels -------------------------------
  var nameInput = document.getElementById("rv-annotator");
  nameInput.value = storageGet(NAME_KEY) || "";
  nameInput.addEventListener("change", function () { storageSet(NAME_KEY, nameInput.value.trim()); });
  var levels = document.getElementById("rv-levels");
  function setLevels(v) {
    levels.value = v === "5" ? "5" : "3";
    document.documentElement.classList.toggle("rv-three", levels.value === "3");
  }
  setLevels(storageGet(LEVELS_KEY));
  levels.addEventListener("change", function () { storageSet(LEVELS_KEY, levels.value); setLevels(levels.value); });
  // the report open in another tab: its marks are taken in as it makes them, so that this tab's next mark
  // does not write them away
  window.addEventListener("storage", function (e) {
    if (e.key === KEY) {
      try { marks = (JSON.parse(e.newValue || "{}").marks) || {}; } catch (err) { return; }
      refresh();
      if (preview()) R.redraw();
    } else if (e.key === NAME_KEY && document.activeElement !== nameInput) {
      nameInput.value = e.newValue || "";
    }
  });
  refresh();
  if (preview()) R.redraw();  // the marks kept from an earlier visit split their clusters again
  if (!kept) say("This browser does not keep the marks (storage refused): export them before you close the page.");
})();
