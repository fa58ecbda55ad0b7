/* nlsim report page: the report's cluster rule, in the page's own script, for the review panel's preview
   (review.js). A port of nlsim.clusters.rules (ClusterRule.clusters: ConnectedComponents, SharedSupport
   with its share and what a large cluster needs), of the exact copies read as their representative
   (nlsim.clusters.copies: contract, expand) and of both ways a "not the same story" parts a group
   (nlsim.clusters.cuts: "order", "min-cut"). Item ids are strings, ordered as Python orders them (by code
   point); the same links, verdicts and copies give the same groups as the Python rule
   (tests/report/test_rules_js.py checks it). No network, no DOM. */
(function () {
  "use strict";

  function cmp(x, y) {  // Python's order of two strings: by code point, not by UTF-16 unit
    if (x === y) return 0;
    var n = Math.min(x.length, y.length);
    for (var i = 0; i < n; i++) {
      var a = x.charCodeAt(i), b = y.charCodeAt(i);
      if (a === b) continue;
      // a surrogate (0xD800-0xDFFF) is part of a code point above 0xFFFF: after every unit of 0xE000-0xFFFF
      var sa = a >= 0xd800 && a <= 0xdfff, sb = b >= 0xd800 && b <= 0xdfff;
      if (sa && !sb && b >= 0xe000) return 1;
      if (sb && !sa && a >= 0xe000) return -1;
      return a - b;
    }
    return x.length - y.length;
  }
  function sortIds(ids) { return ids.slice().sort(cmp); }
  function pairKey(a, b) { return cmp(a, b) <= 0 ? [a, b] : [b, a]; }  // constraints.pair_key
  function keyOf(a, b) { var k = pairKey(a, b); return JSON.stringify(k); }
  function cmpPair(p, q) { return cmp(p[0], q[0]) || cmp(p[1], q[1]); }
  function byFirst(groups) { return groups.sort(function (g, h) { return cmp(g[0], h[0]); }); }

  // --- LinkConstraints: must-link and cannot-link pairs, each as pair_key, self-pairs left out ----------
  function constraintsOf(must, cannot) {
    var c = { must: {}, cannot: {} };
    (must || []).forEach(function (p) { if (p[0] !== p[1]) c.must[keyOf(p[0], p[1])] = pairKey(p[0], p[1]); });
    (cannot || []).forEach(function (p) { if (p[0] !== p[1]) c.cannot[keyOf(p[0], p[1])] = pairKey(p[0], p[1]); });
    return c;
  }
  function pairsOf(set) { return Object.keys(set).map(function (k) { return set[k]; }).sort(cmpPair); }
  function forbids(c, a, b) { return Object.prototype.hasOwnProperty.call(c.cannot, keyOf(a, b)); }

  // --- rules._unique: one link per pair (the last score given wins), self-links dropped, in pair order -
  function unique(links) {
    var best = {};
    links.forEach(function (k) {
      if (k[0] === k[1]) return;
      var p = pairKey(String(k[0]), String(k[1]));
      best[JSON.stringify(p)] = [p[0], p[1], Number(k[2])];
    });
    return Object.keys(best).map(function (key) { return best[key]; }).sort(cmpPair);
  }

  // --- rules._joined: must-links first, then the links by descending score (links of one score by when
  // their later item came, then their earlier one: order, each id's rank under the order rule; else by
  // id), never two groups holding a cannot-link pair ------------------------------------------------------
  function byArrival(order) {  // links of one score: the one whose later item came first, as a daily run met them
    return function (x, y) {
      var a = [order[x[0]], order[x[1]]].sort(function (p, q) { return q - p; });
      var b = [order[y[0]], order[y[1]]].sort(function (p, q) { return q - p; });
      return (y[2] - x[2]) || (a[0] - b[0]) || (a[1] - b[1]);
    };
  }
  function joined(links, c, order) {
    var cannot = {}, any = false;
    pairsOf(c.cannot).forEach(function (p) {
      (cannot[p[0]] = cannot[p[0]] || {})[p[1]] = true;
      (cannot[p[1]] = cannot[p[1]] || {})[p[0]] = true;
      any = true;
    });
    var must = pairsOf(c.must).filter(function (p) { return !forbids(c, p[0], p[1]); });
    var ordered = must.map(function (p) { return [p[0], p[1], Infinity]; }).concat(
      links.slice().sort(order ? byArrival(order) : function (x, y) {
        return (y[2] - x[2]) || cmp(x[0], y[0]) || cmp(x[1], y[1]);
      }));
    var group = new Map();
    function home(i) { if (!group.has(i)) group.set(i, [i]); return group.get(i); }
    ordered.forEach(function (k) {
      var ga = home(k[0]), gb = home(k[1]);
      if (ga === gb) return;
      var small = ga.length <= gb.length ? ga : gb, large = small === ga ? gb : ga;
      if (any) {
        var inLarge = {};
        large.forEach(function (i) { inLarge[i] = true; });
        for (var s = 0; s < small.length; s++) {
          var no = cannot[small[s]];
          if (no && Object.keys(no).some(function (j) { return inLarge[j]; })) return;
        }
      }
      small.forEach(function (i) { large.push(i); group.set(i, large); });
    });
    var seen = new Set();
    group.forEach(function (g) { if (g.length > 1) seen.add(g); });
    return byFirst(Array.from(seen).map(sortIds));
  }

  // --- a binary heap of arrays, smallest first by their elements in order (Python's heapq of tuples) ----
  function lessThan(x, y) {
    for (var i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i];
    return false;
  }
  function Heap() { this.a = []; }
  Heap.prototype.push = function (v) {
    var a = this.a, i = a.length;
    a.push(v);
    while (i > 0) {
      var p = (i - 1) >> 1;
      if (!lessThan(a[i], a[p])) break;
      var t = a[i]; a[i] = a[p]; a[p] = t; i = p;
    }
  };
  Heap.prototype.pop = function () {
    var a = this.a, top = a[0], last = a.pop();
    if (a.length) {
      a[0] = last;
      var i = 0;
      for (;;) {
        var l = 2 * i + 1, r = l + 1, m = i;
        if (l < a.length && lessThan(a[l], a[m])) m = l;
        if (r < a.length && lessThan(a[r], a[m])) m = r;
        if (m === i) break;
        var t = a[i]; a[i] = a[m]; a[m] = t; i = m;
      }
    }
    return top;
  };

  // --- rules._start_groups and rules._average_linkage ----------------------------------------------------
  function averageLinkage(members, links, minShare, refuse, weights) {
    if (members.length === 2 && !weights) return [members];  // copies may make two items a large cluster
    var w = members.map(function (m) { return weights ? (weights[m] === undefined ? 1 : weights[m]) : 1; });
    var index = {};
    members.forEach(function (m, i) { index[m] = i; });
    var near = members.map(function () { return {}; }), pairs = [];
    links.forEach(function (k) {
      if (index[k[0]] === undefined || index[k[1]] === undefined) return;
      var x = Math.min(index[k[0]], index[k[1]]), y = Math.max(index[k[0]], index[k[1]]);
      near[x][y] = true;
      near[y][x] = true;
      pairs.push([x, y, k[2]]);
    });
    var groups = new Map(), size = {}, between = {}, version = {};
    members.forEach(function (m, i) { groups.set(i, [m]); size[i] = w[i]; between[i] = new Map(); version[i] = 0; });
    pairs.forEach(function (p) {
      var x = p[0], y = p[1], many = w[x] * w[y], closed = 0;
      Object.keys(near[x]).forEach(function (z) { if (near[y][z]) closed += w[z]; });
      closed *= many;
      var old = between[x].get(y) || [0, 0, 0];
      var now = [old[0] + many, old[1] + closed, old[2] + many * p[2]];
      between[x].set(y, now);
      between[y].set(x, now);
    });
    var heap = new Heap();
    function push(g, h) {
      var x = Math.min(g, h), y = Math.max(g, h), n = between[x].get(y);
      heap.push([-n[0] / (size[x] * size[y]), -n[1] / n[0], -n[2] / n[0], x, y, version[x], version[y]]);
    }
    members.forEach(function (m, g) { between[g].forEach(function (_, h) { if (g < h) push(g, h); }); });
    while (heap.a.length) {
      var e = heap.pop(), x = e[3], y = e[4];
      if (!groups.has(x) || !groups.has(y) || version[x] !== e[5] || version[y] !== e[6]) continue;
      if (-e[0] < minShare) break;
      if (refuse && refuse(size[x] + size[y], -e[0], -e[2])) continue;
      groups.set(x, groups.get(x).concat(groups.get(y)));
      groups.delete(y);
      size[x] += size[y];
      delete size[y];
      version[x] += 1;
      var gone = between[y];
      delete between[y];
      gone.forEach(function (n, other) {
        between[other].delete(y);
        if (other === x) return;
        var m = between[x].get(other) || [0, 0, 0];
        var sum = [m[0] + n[0], m[1] + n[1], m[2] + n[2]];
        between[x].set(other, sum);
        between[other].set(x, sum);
      });
      between[x].forEach(function (_, other) { push(x, other); });
    }
    var out = [];
    groups.forEach(function (g) { if (g.length > 1) out.push(sortIds(g)); });
    return out;
  }

  // --- the rules: ConnectedComponents and SharedSupport (rules.RULES) ------------------------------------
  function ruleOf(spec) {
    var name = spec && spec.name === "support" ? "support" : "components";
    if (name === "components") return { name: name, groups: function (links) { return joined(links, constraintsOf()); } };
    // no share given: the class's default, rules.DEFAULT_SUPPORT
    var minShare = spec.min_share === null || spec.min_share === undefined ? 0.4 : spec.min_share;
    var large = spec.large === undefined ? null : spec.large;
    var largeShare = spec.large_share === undefined ? null : spec.large_share;
    var largeFloor = spec.large_floor === undefined ? null : spec.large_floor;
    function refuse(size, share, mean) {  // SharedSupport.refuse
      if (large === null || size < large) return false;
      var weakShare = largeShare !== null && share < largeShare;
      return weakShare || (largeFloor !== null && mean < largeFloor);
    }
    return {
      name: name,
      groups: function (links, weights, order) {
        var out = [];
        joined(links, constraintsOf()).forEach(function (members) {
          // exact ties merge first what came first (SharedSupport.groups): the members in arrival order
          if (order) members.sort(function (x, y) { return order[x] - order[y]; });
          out = out.concat(averageLinkage(members, links, minShare, refuse, weights));
        });
        return out;
      },
    };
  }

  // --- copies.contract and copies.expand -------------------------------------------------------------
  function contract(links, c, repOf) {
    var best = {};
    links.forEach(function (k) {
      var a = repOf[k[0]] === undefined ? k[0] : repOf[k[0]], b = repOf[k[1]] === undefined ? k[1] : repOf[k[1]];
      if (a === b) return;
      var p = pairKey(a, b), key = JSON.stringify(p);
      best[key] = best[key] && best[key][2] >= Number(k[2]) ? best[key] : [p[0], p[1], Number(k[2])];
    });
    function lifted(pairs) {
      return pairs.map(function (p) {
        return [repOf[p[0]] === undefined ? p[0] : repOf[p[0]], repOf[p[1]] === undefined ? p[1] : repOf[p[1]]];
      });
    }
    var weights = {};
    Object.keys(repOf).forEach(function (copy) { var r = repOf[copy]; weights[r] = (weights[r] || 1) + 1; });
    var between = Object.keys(best).map(function (key) { return best[key]; }).sort(cmpPair);
    return [between, constraintsOf(lifted(pairsOf(c.must)), lifted(pairsOf(c.cannot))), weights];
  }
  function expand(groups, repOf) {
    var members = {}, reps = [];
    Object.keys(repOf).forEach(function (copy) {
      var r = repOf[copy];
      if (!members[r]) { members[r] = []; reps.push(r); }
      members[r].push(copy);
    });
    var placed = {}, out = [];
    groups.forEach(function (g) {
      var all = [];
      g.forEach(function (r) { placed[r] = true; all.push(r); (members[r] || []).forEach(function (i) { all.push(i); }); });
      out.push(sortIds(all));
    });
    reps.forEach(function (r) { if (!placed[r]) out.push(sortIds([r].concat(members[r]))); });
    return byFirst(out);
  }

  // --- cuts.min_cut_apart: the cheapest links whose removal parts each cannot-link pair ---------------
  var SCALE = 10000, MUST = 1000000000;
  function roundHalfEven(x) {  // Python's round() of a float to an integer
    var f = Math.floor(x), d = x - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    return f % 2 === 0 ? f : f + 1;
  }
  function cutApart(group, edges, forced, pair) {
    var names = sortIds(group), index = {};
    names.forEach(function (m, i) { index[m] = i; });
    var n = names.length, inside = [], seen = {};
    Object.keys(edges).concat(Object.keys(forced)).forEach(function (key) {
      if (seen[key]) return;
      seen[key] = true;
      var p = JSON.parse(key);
      if (index[p[0]] !== undefined && index[p[1]] !== undefined) inside.push(key);
    });
    var cap = [], adj = [];
    for (var i = 0; i < n; i++) { cap.push({}); adj.push([]); }
    inside.forEach(function (key) {
      var p = JSON.parse(key), u = index[p[0]], v = index[p[1]];
      var c = forced[key] ? MUST : Math.max(1, roundHalfEven(edges[key] * SCALE));
      cap[u][v] = c; cap[v][u] = c;
      adj[u].push(v); adj[v].push(u);
    });
    var flow = [];
    for (i = 0; i < n; i++) flow.push({});
    function residual(u, v) { return (cap[u][v] || 0) - (flow[u][v] || 0); }
    var s = index[pair[0]], t = index[pair[1]];
    for (;;) {  // Edmonds-Karp: the source side left reachable is the same for every maximum flow
      var prev = new Array(n).fill(-1), queue = [s];
      prev[s] = s;
      while (queue.length && prev[t] < 0) {
        var u = queue.shift();
        adj[u].forEach(function (v) { if (prev[v] < 0 && residual(u, v) > 0) { prev[v] = u; queue.push(v); } });
      }
      if (prev[t] < 0) break;
      var push = Infinity;
      for (var v = t; v !== s; v = prev[v]) push = Math.min(push, residual(prev[v], v));
      for (v = t; v !== s; v = prev[v]) {
        flow[prev[v]][v] = (flow[prev[v]][v] || 0) + push;
        flow[v][prev[v]] = (flow[v][prev[v]] || 0) - push;
      }
    }
    var side = new Array(n).fill(false), stack = [s];
    side[s] = true;
    while (stack.length) {
      var x = stack.pop();
      adj[x].forEach(function (y) { if (!side[y] && residual(x, y) > 0) { side[y] = true; stack.push(y); } });
    }
    var root = names.map(function (_, k) { return k; });
    function find(k) { while (root[k] !== k) { root[k] = root[root[k]]; k = root[k]; } return k; }
    inside.forEach(function (key) {
      var p = JSON.parse(key), u = index[p[0]], v = index[p[1]];
      if (side[u] !== side[v]) { delete edges[key]; delete forced[key]; }
      else root[find(u)] = find(v);
    });
    var parts = {};
    names.forEach(function (m, k) { var r = find(k); (parts[r] = parts[r] || []).push(m); });
    return Object.keys(parts).map(function (r) { return parts[r]; });
  }
  function minCutApart(groups, links, cannot, must) {
    var apart = {}, forced = {}, edges = {};
    cannot.forEach(function (p) { apart[keyOf(p[0], p[1])] = pairKey(p[0], p[1]); });
    must.forEach(function (p) { var k = keyOf(p[0], p[1]); if (!apart[k]) forced[k] = true; });
    links.forEach(function (k) {
      var key = keyOf(k[0], k[1]);
      if (!apart[key]) edges[key] = Math.max(edges[key] === undefined ? 0 : edges[key], Number(k[2]));
    });
    var clashes = pairsOf(apart), out = [], todo = groups.map(function (g) { return g.slice(); });
    while (todo.length) {
      var group = todo.pop(), inside = {};
      group.forEach(function (m) { inside[m] = true; });
      var clash = clashes.filter(function (p) { return inside[p[0]] && inside[p[1]]; })[0];
      if (!clash) { if (group.length > 1) out.push(sortIds(group)); continue; }
      todo = todo.concat(cutApart(group, edges, forced, clash));
    }
    return byFirst(out);
  }

  // --- ClusterRule.clusters ------------------------------------------------------------------------------
  /* The clusters of links ([id_a, id_b, score]) under the rule spec ({name: "support" | "components",
     min_share, large, large_share, large_floor}) with the editors' must-links and cannot-links
     ({must: [[a, b]], cannot: [[a, b]]}) honoured, the exact copies (repOf: each copy's representative)
     read as their representative, a "not the same story" parting a group by cut ("order" or "min-cut"),
     exact ties settled by the order (each id's rank under the order rule: earliest first; by id without
     it): sorted lists of ids, sorted by their first id. */
  function clusters(spec, links, verdicts, repOf, cut, order) {
    var rule = ruleOf(spec);
    var c = constraintsOf(verdicts && verdicts.must, verdicts && verdicts.cannot), weights = null;
    var copies = repOf && Object.keys(repOf).length ? repOf : null;
    links = links.map(function (k) { return [String(k[0]), String(k[1]), Number(k[2])]; });
    if (copies) {
      var made = contract(links, c, copies);
      links = made[0]; c = made[1]; weights = made[2];
    }
    var allowed = unique(links).filter(function (k) { return !forbids(c, k[0], k[1]); });
    var inside = {};
    rule.groups(allowed, weights, order).forEach(function (g, n) { g.forEach(function (m) { inside[m] = n; }); });
    var held = allowed.filter(function (k) { return inside[k[0]] !== undefined && inside[k[0]] === inside[k[1]]; });
    var out;
    var cannot = pairsOf(c.cannot);
    if (cut === "min-cut" && cannot.length) {
      var together = joined(held, constraintsOf(pairsOf(c.must), []), order);
      out = minCutApart(together, held, cannot, pairsOf(c.must));
    } else {
      out = joined(held, c, order);
    }
    return copies ? expand(out, copies) : out;
  }

  window.nlsimRules = { clusters: clusters, compare: cmp };
})();
