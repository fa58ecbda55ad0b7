/* nlsim report page: draws the cluster list from the embedded JSON, one page at a time, with search,
   filters and sort. The tables' headers and cells come from the column declarations the data carries
   (DATA.columns, nlsim.io.columns): rows are objects keyed by column name, a column of items
   (source "item.id") holds indexes into DATA.items. No network; titles are set with textContent, never as
   markup, and user text (titles, sources, ids) is bidi-isolated (<bdi>, dir=auto): a right-to-left
   override in it cannot reorder the page's own words. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("nlsim-data").textContent);
  var items = DATA.items; // objects: the items columns the report shows (id, title, source, url, published_at, ...)
  var COLUMNS = DATA.columns; // each table's columns: {name, label, format, shown, source[, reduce]}
  function shownOf(table) { return COLUMNS[table].filter(function (c) { return c.shown; }); }
  function columnOf(table, name) { return COLUMNS[table].filter(function (c) { return c.name === name; })[0]; }
  function isItems(c) { return c.source === "item.id"; }  // its values are indexes into DATA.items
  // an item is shown by its title, linked to the first link column the page shows (its article)
  var LINK = shownOf("items").filter(function (c) { return c.format === "link"; })[0];
  var all = DATA.clusters;
  var HAN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[\ud840-\ud87f][\udc00-\udfff]/;
  var state = {
    q: "", status: "", bucket: "", period: "", source: "", topic: "", sort: "recent", page: 0, per: DATA.pageSize,
  };
  // the topic groups (topics.parquet) by id: a story's label opens its group (its stories and single items)
  var TOPICS = {};
  (DATA.topics || []).forEach(function (t) { TOPICS[t.topic_id] = t; });
  var list = document.getElementById("clusters");
  var shown = document.getElementById("shown");
  var q = document.getElementById("q");
  var view = all;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function bdi(text) { return el("bdi", null, text); }
  function line(tag, cls, parts) {  // the page's words (strings) and user text (nodes) in one element
    var e = el(tag, cls);
    parts.forEach(function (p) { e.appendChild(typeof p === "string" ? document.createTextNode(p) : p); });
    return e;
  }
  function interleave(groups, sep) {  // groups (arrays of strings and nodes) with the page's separator between
    var out = [];
    groups.forEach(function (g, k) { out = out.concat(k ? [sep] : [], g); });
    return out;
  }
  function isolated(texts, sep) { return interleave(texts.map(function (t) { return [bdi(t)]; }), sep); }
  function fmt(n) { return Number(n).toLocaleString("en-US"); }
  // a score with the threshold's decimals (DATA.scoreDigits), cut, never rounded up: a score below the
  // threshold never shows as the threshold (0.909419 is 0.9094 beside 0.9095); the +1e-7 keeps a score equal
  // to the threshold from dropping below it through binary fractions. The data's scores are cut already
  // (nlsim.io.columns.page_score: 6 decimals, never rounded up), so 0.8813486 is 0.881348 beside 0.881349
  function score(v) {
    if (v === null || v === undefined || v === "" || !isFinite(Number(v))) return "–";
    var p = Math.pow(10, DATA.scoreDigits);
    return (Math.floor(Number(v) * p + 1e-7) / p).toFixed(DATA.scoreDigits);
  }
  function safeLink(url) { return typeof url === "string" && /^https?:\/\//i.test(url) ? url : null; }
  // a title in a line of a list (a story's row, a topic, an editor's decision) is cut at DATA.titleChars
  // characters with "…", its first DATA.tooltipChars in its tooltip (nlsim.report.page.short_title);
  // "whole": as it is (the opened story's items, the pairs an editor marks), where it is read
  function cut(text, n) {
    var chars = Array.from(text);
    return chars.length > n ? chars.slice(0, n).join("") + "…" : text;
  }
  function title(i, withLink, whole) {
    var it = items[i];
    var text = String(it.title || "").replace(/\s+/g, " ").trim() || "(no title)";
    var shown = whole ? text : cut(text, DATA.titleChars || 300);
    var node, url = withLink && LINK ? safeLink(it[LINK.name]) : null;
    if (url) {
      node = el("a", "t", shown);
      node.href = url;
      node.target = "_blank";
      node.rel = "noopener noreferrer";
    } else {
      node = el("span", "t", shown);
    }
    if (shown !== text) node.title = cut(text, DATA.tooltipChars || 2000);
    // each title in its own script (nlsim.report.page.title_langs), else the run's
    if (HAN.test(text)) node.lang = (DATA.titleLang || {})[i] || DATA.cjkLang;
    node.dir = "auto";  // isolated from the words around it, and right-to-left titles read right to left
    return node;
  }
  // a value of a column as the page shows it, by the column's format: the page's words (strings) and user
  // text (nodes); [] when there is none
  function parts(c, v) {
    if (v === null || v === undefined || v === "" || (Array.isArray(v) && !v.length)) return [];
    if (isItems(c)) return Array.isArray(v) ? interleave(v.map(function (i) { return [title(i, true, true)]; }), ", ") : [title(v, true, true)];
    if (c.format === "number") return [score(v)];
    if (c.format === "integer") return [fmt(v)];
    if (c.format === "flag") return [v ? "yes" : "no"];
    if (c.format === "time") return [String(v)];
    if (c.format === "list") return isolated(v, ", ");
    if (c.format === "link") {
      var url = safeLink(v);
      if (!url) return [];
      var a = el("a", null, url);
      a.href = url; a.target = "_blank"; a.rel = "noopener noreferrer";
      return [a];
    }
    return [bdi(v)];
  }
  function head(c) {  // a column's header: its label; a time says the zone the page shows it in
    return c.format === "time" ? c.label + " (" + DATA.timeZone + ")" : c.label;
  }
  function cell(c, v) {  // a table cell of a column's value (a missing score: "–")
    if (c.format === "number") return el("td", "score", score(v));
    var td = el("td", c.format === "time" ? "when" : isItems(c) ? "t" : null);
    parts(c, v).forEach(function (p) { td.appendChild(typeof p === "string" ? document.createTextNode(p) : p); });
    return td;
  }
  var SEARCHED = shownOf("items").filter(function (c) { return c.format === "text"; });  // id, title, source, ...
  // Traditional and Simplified Chinese read as one: each character the page holds (and its Traditional forms)
  // as its Simplified form (DATA.fold, nlsim.report.page.script_fold), in the titles and in the query alike
  // and a text as it looks, whatever its code points: NFKC (a combining accent as the accented letter a
  // keyboard types, full-width letters as ASCII ones), curly quotes and apostrophes as straight ones
  var FOLD = DATA.fold || {}, FOLDS = Object.keys(FOLD).length > 0;
  var QUOTES = /[\u2018\u2019\u201a\u201b\u2032]/g, DOUBLE = /[\u201c\u201d\u201e\u201f\u2033]/g;
  function fold(text) {
    text = text.normalize("NFKC").replace(QUOTES, "'").replace(DOUBLE, '"');
    if (!FOLDS) return text;
    var out = "";
    for (var ch of text) out += Object.prototype.hasOwnProperty.call(FOLD, ch) ? FOLD[ch] : ch;
    return out;
  }
  function hay(c) {
    if (c._hay === undefined) {
      var words = [c.cluster_id];
      for (var k = 0; k < c.member_ids.length; k++) {
        var it = items[c.member_ids[k]];
        SEARCHED.forEach(function (col) { words.push(it[col.name]); });
      }
      c._hay = fold(words.join("\n")).toLowerCase();
    }
    return c._hay;
  }
  function matches(c, terms) {
    if (state.status && c.status !== state.status) return false;
    if (state.bucket && c.bucket !== state.bucket) return false;
    if (state.period && (c.period || "undated") !== state.period) return false;
    if (state.source && c.sources.indexOf(state.source) < 0) return false;
    if (state.topic && c.topic_id !== state.topic) return false;
    if (terms.length) {
      var h = hay(c);
      for (var t = 0; t < terms.length; t++) if (h.indexOf(terms[t]) < 0) return false;
    }
    return true;
  }
  // two times as the page holds them, earlier first: "YYYY-MM-DD HH:MM" in DATA.timeZone, a time in an hour
  // the clocks repeat with its offset, "2024-11-03 01:10 (UTC-05:00)" (nlsim.io.columns.page_time). Two
  // times of a repeated hour compare by their instants (01:50 UTC-04:00 came before 01:10 UTC-05:00), any
  // other two by their local time
  var OFFSET = / \(UTC([+-]\d\d:\d\d)\)$/;
  function instant(t, m) { return Date.parse(t.slice(0, 10) + "T" + t.slice(11, 16) + ":00" + m[1]); }
  function timeCmp(a, b) {
    var ma = OFFSET.exec(a), mb = OFFSET.exec(b);
    if (ma && mb) return instant(a, ma) - instant(b, mb);
    a = a.slice(0, 16); b = b.slice(0, 16);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  var STATUS_ORDER = { merged: 0, grown: 1, new: 2, regrouped: 3, dissolved: 4, unchanged: 5 };
  // a status's rank, merged first (rank 0 is a rank: an unknown status comes last)
  function statusRank(c) {
    return Object.prototype.hasOwnProperty.call(STATUS_ORDER, c.status) ? STATUS_ORDER[c.status] : 9;
  }
  function cmp(a, b) {
    var s = state.sort, d = 0;
    // latest activity first: the story's last item, then its strongest link (a stronger story first)
    if (s === "recent") d = timeCmp(b.last_published || "", a.last_published || "") ||
      (b.max_similarity || 0) - (a.max_similarity || 0);
    else if (s === "newest") d = timeCmp(b.last_published || "", a.last_published || "");
    else if (s === "oldest") d = timeCmp(a.first_published || "\uffff", b.first_published || "\uffff");
    else if (s === "score") d = (b.max_similarity || 0) - (a.max_similarity || 0);
    else if (s === "status") d = statusRank(a) - statusRank(b);
    if (!d) d = b.size - a.size;
    if (!d) d = a.cluster_id < b.cluster_id ? -1 : a.cluster_id > b.cluster_id ? 1 : 0;
    return d;
  }
  function apply(keepPage) {
    var terms = fold(state.q).toLowerCase().split(/\s+/).filter(Boolean);
    view = all.filter(function (c) { return matches(c, terms); });
    view.sort(cmp);
    if (!keepPage) state.page = 0;
    draw();
  }
  function span(c) {
    var first = c.first_published, last = c.last_published;
    var t = first ? first : "undated";
    if (last && last !== first) t += " – " + (last.slice(0, 10) === t.slice(0, 10) ? last.slice(11) : last);
    return t + (first ? " " + DATA.timeZone : "");
  }
  // the cluster's line lays out the clusters columns it names; every other column the page shows follows
  // them, as "label value"
  var LAID_OUT = {
    cluster_id: 1, status: 1, size: 1, representative: 1, member_ids: 1, added_ids: 1, absorbed: 1,
    sources: 1, first_published: 1, last_published: 1, max_similarity: 1, weakest_link: 1, topic_id: 1,
  };
  var MORE = shownOf("clusters").filter(function (c) { return !LAID_OUT[c.name]; });
  function label(name) { return columnOf("clusters", name).label; }
  // --- topics: a story's label names its topic group; opened, the group lists its stories and single items
  function topicLabel(id) {
    var t = TOPICS[id], b = el("button", "topic-label");
    b.type = "button";
    b.dataset.topic = id;
    b.appendChild(document.createTextNode("topic: "));
    if (t && t.representative !== null) b.appendChild(title(t.representative, false));
    else b.appendChild(bdi(id));
    if (t) b.appendChild(document.createTextNode(" · " + fmt(t.stories) + " stories"));
    b.title = "open this topic: its stories and single items";
    b.addEventListener("click", function (e) { e.preventDefault(); e.stopPropagation(); openTopic(id); });
    return b;
  }
  function byId() { var out = {}; all.forEach(function (c) { out[c.cluster_id] = c; }); return out; }
  function drawTopic() {
    var box = document.getElementById("topic-view");
    if (!box) return;
    box.textContent = "";
    box.hidden = !state.topic;
    if (!state.topic) return;
    var t = TOPICS[state.topic], here = byId();
    var head = el("h3", null, "Topic: ");
    if (t && t.representative !== null) head.appendChild(title(t.representative, true)); else head.appendChild(bdi(state.topic));
    box.appendChild(head);
    var mine = all.filter(function (c) { return c.topic_id === state.topic; });
    var ids = t ? t.cluster_ids.slice() : [];
    mine.forEach(function (c) { if (ids.indexOf(c.cluster_id) < 0) ids.push(c.cluster_id); });
    if (t) {
      var when = t.first_published ? " · " + t.first_published + (t.last_published && t.last_published !== t.first_published ? " – " + t.last_published : "") + " " + DATA.timeZone : "";
      box.appendChild(el("p", "meta", fmt(t.size) + " items · " + fmt(t.stories) + " stories (its story clusters and its single items)" + when));
    }
    box.appendChild(el("h4", null, "Its stories (" + ids.length + ")"));
    var ul = box.appendChild(el("ul", "topic-stories")), inStory = {};
    ids.forEach(function (id) {
      var c = here[id], li = ul.appendChild(el("li"));
      li.dataset.cluster = id;
      if (!c) { li.appendChild(bdi(id)); li.appendChild(document.createTextNode(" (not in this report)")); return; }
      c.member_ids.forEach(function (i) { inStory[i] = true; });
      var a = el("a", "topic-story");
      a.href = "#cluster-" + encodeURIComponent(id);
      a.appendChild(title(c.representative, false));
      li.appendChild(a);
      li.appendChild(document.createTextNode(" · " + c.size + " items"));
    });
    var single = t ? t.member_ids.filter(function (i) { return !inStory[i]; }) : [];
    var complete = ids.every(function (id) { return here[id]; });
    box.appendChild(el("h4", null, (complete ? "Its single items (" : "Its items in no story of this report (") + single.length + ")"));
    var singles = box.appendChild(el("ul", "topic-singles"));
    single.forEach(function (i) { var li = singles.appendChild(el("li")); li.dataset.item = i; li.appendChild(title(i, true)); });
    if (!single.length) singles.appendChild(el("li", "meta", "none"));
    var close = el("button", null, "back to every story");
    close.type = "button";
    close.id = "topic-close";
    close.onclick = function () { openTopic(""); };
    box.appendChild(close);
  }
  function openTopic(id) {
    state.topic = id;
    apply(false);
    var box = document.getElementById("topic-view");
    if (box && id) box.scrollIntoView({ block: "nearest" });
  }
  function summaryRow(c) {
    var s = el("summary");
    s.appendChild(el("span", "size", c.size + " items"));
    var rep = el("span", "rep");
    if (DATA.daily) rep.appendChild(el("span", "badge " + c.status, c.status));
    if (c.preview) rep.appendChild(el("span", "badge preview", c.preview));  // split by an editor's mark (review.js)
    if (c.verdicts && c.verdicts.length) rep.appendChild(el("span", "badge verdicts", "changed by editors"));
    rep.appendChild(title(c.representative, false));
    if (c.topic_id) rep.appendChild(topicLabel(c.topic_id));
    s.appendChild(rep);
    s.appendChild(el("span", "meta", span(c)));
    var sub = [isolated(c.sources.slice(0, 4), ", ").concat(c.sources.length > 4 ? [" +" + (c.sources.length - 4)] : [])];
    sub.push([label("max_similarity") + " " + score(c.max_similarity)]);
    if (c.weakest_link !== null && c.weakest_link !== undefined) sub.push([label("weakest_link") + " " + score(c.weakest_link)]);
    if (DATA.daily && c.added_ids.length && c.status !== "new") sub.push([c.added_ids.length + " added in this run"]);
    if (c.absorbed.length) sub.push([label("absorbed") + " "].concat(isolated(c.absorbed, ", ")));
    MORE.forEach(function (col) {
      var v = parts(col, c[col.name]);
      if (v.length) sub.push([col.label + " "].concat(v));
    });
    sub.push([bdi(c.cluster_id)]);
    s.appendChild(line("span", "sub", interleave(sub.filter(function (p) { return p.length; }), " · ")));
    return s;
  }
  function table(head) {
    var t = el("table"), tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    t.appendChild(el("thead")).appendChild(tr);
    return t;
  }
  // the members' table: the item's title first (linked), its id last, the other items columns the page
  // shows between, in their declared order
  var ID = columnOf("items", "id"), TITLE = columnOf("items", "title");
  var MEMBER_COLUMNS = shownOf("items").filter(function (c) { return c !== ID && c !== TITLE && c !== LINK; });
  // the pairs' table: the pair's own columns the page shows (its scores), then its two items
  var PAIR_COLUMNS = shownOf("pairs").filter(function (c) { return !isItems(c); })
    .concat(shownOf("pairs").filter(isItems));
  // the card of the editors' verdicts that changed a cluster: which joined two of its items, which split one
  // of them from another item (nlsim.report.page.cluster_verdicts)
  function verdictCard(c) {
    var box = el("div", "verdict-card");
    box.appendChild(el("h3", null, "Changed by editors’ verdicts"));
    var ul = box.appendChild(el("ul"));
    c.verdicts.forEach(function (v) {
      var li = ul.appendChild(el("li", v.how));
      if (v.how === "joined") {
        li.appendChild(document.createTextNode("joined: an editor said "));
        li.appendChild(title(v.a, false));
        li.appendChild(document.createTextNode(" and "));
        li.appendChild(title(v.b, false));
        li.appendChild(document.createTextNode(" are the same story"));
      } else {
        li.appendChild(document.createTextNode("split: an editor said "));
        li.appendChild(title(v.a, false));
        li.appendChild(document.createTextNode(" is not the same story as "));
        li.appendChild(title(v.b, false));
        li.appendChild(document.createTextNode(", kept out of this cluster ("));
        li.appendChild(v.other ? bdi("in " + v.other) : document.createTextNode("in no cluster"));
        li.appendChild(document.createTextNode(")"));
      }
      if (v.overrules) li.appendChild(document.createTextNode(" (overruling the annotators’ score)"));
      if (v.confirms) li.appendChild(document.createTextNode(" (confirming the annotators’ score)"));
      if (v.notes) li.appendChild(el("div", "verdict-note", "Editor’s note: ")).appendChild(bdi(v.notes));
    });
    return box;
  }
  function body(c) {
    var b = el("div", "cbody");
    var link = el("a", "permalink", "link to this cluster");
    link.href = "#cluster-" + encodeURIComponent(c.cluster_id);
    b.appendChild(link);
    if (DATA.daily && c.status !== "new" && c.status !== "unchanged") {
      var what = [];
      if (c.added_ids.length) what.push([c.added_ids.length + " item(s) joined in this run (highlighted)"]);
      if (c.absorbed.length) what.push(["clusters "].concat(isolated(c.absorbed, ", "), [" were merged into it"]));
      if (what.length) b.appendChild(line("p", "meta", interleave(what, "; ").concat(["."])));
    }
    if (c.verdicts && c.verdicts.length) b.appendChild(verdictCard(c));
    var added = {};  // a new cluster's members all joined it in this run: marked only in older clusters
    if (DATA.daily && c.status !== "new") c.added_ids.forEach(function (i) { added[i] = true; });
    var t = table([""].concat([head(TITLE)], MEMBER_COLUMNS.map(head), [head(ID)]));
    var tb = t.appendChild(el("tbody"));
    c.member_ids.forEach(function (i) {
      var tr = el("tr", added[i] ? "added" : null);
      tr.dataset.item = i;  // the review panel (review.js) adds its "pick" button to the row
      var mark = el("td");
      if (i === c.representative) mark.appendChild(el("span", null, "★")).title = "representative";
      if (added[i]) mark.appendChild(el("span", "badge added", "added"));
      tr.appendChild(mark);
      var td = el("td", "t");
      td.appendChild(title(i, true, true));
      tr.appendChild(td);
      MEMBER_COLUMNS.forEach(function (col) { tr.appendChild(cell(col, items[i][col.name])); });
      tr.appendChild(el("td", "id")).appendChild(bdi(items[i].id));
      tb.appendChild(tr);
    });
    b.appendChild(el("h3", null, "Items (earliest first; ★ representative)"));
    b.appendChild(t);
    var why = DATA.daily ? "Why grouped: the pairs found in this run that link its items" :
      "Why grouped: the pairs that link its items";
    b.appendChild(el("h3", null, why + " (score ≥ threshold " + (DATA.threshold === null ? "?" : score(DATA.threshold)) + ")"));
    if (c.status === "dissolved") {
      b.appendChild(el("p", "meta", "Dissolved: under this run's model these items are no longer grouped " +
        "together (they were this cluster's members before the model changed)."));
      return b;
    }
    if (!c.pairs.length) {
      b.appendChild(el("p", "meta", "No new pair in this run: the cluster changed through a merge or a regroup."));
      return b;
    }
    var pt = table(PAIR_COLUMNS.map(head));
    var pb = pt.appendChild(el("tbody"));
    var limit = 30;
    function rows(n) {
      pb.textContent = "";
      c.pairs.slice(0, n).forEach(function (p) {
        var tr = el("tr");
        tr.dataset.a = p.id_a; tr.dataset.b = p.id_b;  // a pair to review (review.js)
        if (p.similarity !== null) tr.dataset.score = p.similarity;
        PAIR_COLUMNS.forEach(function (col) { tr.appendChild(cell(col, p[col.name])); });
        pb.appendChild(tr);
      });
    }
    rows(limit);
    b.appendChild(pt);
    if (c.pairs.length > limit) {
      var more = el("button", null, "show all " + fmt(c.pairs.length) + " pairs");
      more.type = "button";
      more.onclick = function () { rows(c.pairs.length); more.remove(); };
      b.appendChild(more);
    }
    return b;
  }
  function card(c) {
    var li = el("li", "cluster");
    li.id = "cluster-" + c.cluster_id;
    li.dataset.cluster = c.cluster_id;
    var d = el("details");
    d.appendChild(summaryRow(c));
    d.addEventListener("toggle", function () {
      if (d.open && d.children.length === 1) d.appendChild(body(c));
    });
    li.appendChild(d);
    return li;
  }
  function pager(box, pages) {
    box.textContent = "";
    if (pages <= 1) return;
    function btn(label, page, disabled) {
      var b = el("button", null, label);
      b.type = "button";
      b.disabled = disabled;
      b.onclick = function () { state.page = page; draw(); document.getElementById("list").scrollIntoView(); };
      box.appendChild(b);
    }
    btn("« first", 0, state.page === 0);
    btn("‹ previous", state.page - 1, state.page === 0);
    box.appendChild(el("span", null, "page " + (state.page + 1) + " of " + fmt(pages)));
    btn("next ›", state.page + 1, state.page >= pages - 1);
    btn("last »", pages - 1, state.page >= pages - 1);
    var per = el("select");
    [20, 50, 100, 500].forEach(function (n) {
      var o = el("option", null, n + " per page");
      o.value = n;
      o.selected = n === state.per;
      per.appendChild(o);
    });
    per.onchange = function () { state.per = Number(per.value); state.page = 0; draw(); };
    box.appendChild(per);
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(view.length / state.per));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * state.per, end = Math.min(view.length, start + state.per);
    list.textContent = "";
    list.start = start + 1;
    var frag = document.createDocumentFragment();
    for (var k = start; k < end; k++) frag.appendChild(card(view[k]));
    list.appendChild(frag);
    var filtered = view.length !== all.length;
    var topicName = state.topic ? " of this topic" : "";
    shown.textContent = view.length
      ? "Showing clusters " + fmt(start + 1) + "–" + fmt(end) + " of " + fmt(view.length) +
        (filtered ? topicName + " matching (" + fmt(all.length) + " in this report)" : " (all clusters of this report)")
      : (all.length ? "No cluster matches (" + fmt(all.length) + " in this report)." : "This report has no cluster.");
    drawTopic();
    pager(document.getElementById("pager-top"), pages);
    pager(document.getElementById("pager-bottom"), pages);
    document.querySelectorAll("button.bar").forEach(function (b) {
      b.classList.toggle("on", state[b.dataset.filter] === b.dataset.value);
    });
  }
  // a filter option's value is percent-encoded (nlsim.report.html.option_value), so that the HTML parser
  // keeps it as the data holds it (a carriage return or a NUL in a source)
  function syncSelect(key) {
    var s = document.querySelector("select[data-filter='" + key + "']");
    if (s) s.value = encodeURIComponent(state[key]);
  }
  q.addEventListener("input", function () { state.q = q.value; apply(false); });
  document.querySelectorAll("select[data-filter]").forEach(function (s) {
    s.addEventListener("change", function () { state[s.dataset.filter] = decodeURIComponent(s.value); apply(false); });
  });
  document.getElementById("sort").addEventListener("change", function (e) { state.sort = e.target.value; apply(false); });
  document.querySelectorAll("button.bar").forEach(function (b) {
    b.addEventListener("click", function () {
      var k = b.dataset.filter;
      state[k] = state[k] === b.dataset.value ? "" : b.dataset.value;
      syncSelect(k);
      apply(false);
      document.getElementById("list").scrollIntoView();
    });
  });
  document.getElementById("reset").addEventListener("click", function () {
    state.q = q.value = "";
    state.topic = "";
    ["status", "bucket", "period", "source"].forEach(function (k) { state[k] = ""; syncSelect(k); });
    apply(false);
  });
  function openFromHash() {
    var h = location.hash.slice(1);
    try { h = decodeURIComponent(h); } catch (e) { /* a link typed by hand with a stray %: read as typed */ }
    if (h.indexOf("topic-") === 0) { openTopic(h.slice(6)); return; }  // a topic group of the day's summary
    if (h.indexOf("cluster-") !== 0) return;
    var id = h.slice(8), k = view.findIndex(function (c) { return c.cluster_id === id; });
    if (k < 0) {
      state.q = q.value = "";
      state.topic = "";
      ["status", "bucket", "period", "source"].forEach(function (key) { state[key] = ""; syncSelect(key); });
      apply(false);
      k = view.findIndex(function (c) { return c.cluster_id === id; });
      if (k < 0) return;
    }
    state.page = Math.floor(k / state.per);
    draw();
    var li = document.getElementById(h);
    if (li) { li.querySelector("details").open = true; li.scrollIntoView(); }
  }
  function redraw() {  // the clusters changed in place (review.js's preview of a split): draw them again
    var open = {};
    list.querySelectorAll("li.cluster").forEach(function (li) {
      if (li.querySelector("details").open) open[li.dataset.cluster] = true;
    });
    apply(true);
    list.querySelectorAll("li.cluster").forEach(function (li) {
      if (open[li.dataset.cluster]) li.querySelector("details").open = true;
    });
  }
  // for the review panel (review.js): the data, how an item's title and a score are shown, the list drawn again
  window.nlsimReport = { data: DATA, title: title, score: score, fmt: fmt, redraw: redraw, timeCmp: timeCmp };
  window.addEventListener("hashchange", openFromHash);
  apply(false);
  if (location.hash) openFromHash();
})();
