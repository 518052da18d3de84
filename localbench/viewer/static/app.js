// localbench run viewer: a list of every simulation with filters, one simulation's conversation
// with its judge labels, and two simulations side by side. Plain DOM, no framework, no network:
// data comes from data/index.js (LB_INDEX) and data/sims/<n>.js (LB_SIM), loaded on demand.
// Every piece of run data is untrusted text: it is only ever set with textContent, never as HTML.
"use strict";

let INDEX = null;
const SIMS = new Map();     // n -> SimulationView
const WAITING = new Map();  // n -> [resolve]
const PAGE = 300;           // list rows rendered at once ("show more" adds the next page)

window.LB_INDEX = (data) => { INDEX = data; start(); };
window.LB_SIM = (n, data) => {
  SIMS.set(n, data);
  for (const resolve of WAITING.get(n) || []) resolve(data);
  WAITING.delete(n);
};

// -- small DOM helpers (text only) ---------------------------------------------------------------
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = String(v);
    else if (k === "href") e.setAttribute("href", safeHref(v));
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
// Links are the viewer's own routes or relative files: anything with a scheme (javascript:, data:...) is dropped.
function safeHref(v) {
  const s = String(v);
  if (s.startsWith("#")) return s;
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(s) ? "#" : s;
}
function safeImage(src) {
  const s = String(src);
  return /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/.test(s) || !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(s) ? s : null;
}
function badge(level, source) {
  const cls = source === "failed" ? "failed" : (level || "none");
  return el("span", {class: `badge ${cls}`, text: source === "failed" ? "failed" : (level ?? "—")});
}
function run(id) { return INDEX.runs.find((r) => r.id === id) || INDEX.runs[0]; }

// -- routing -------------------------------------------------------------------------------------
function route() {
  const h = decodeURIComponent(location.hash.slice(1));
  const app = document.getElementById("app");
  app.replaceChildren();
  window.scrollTo(0, 0);
  if (h.startsWith("sim/")) return showSim(app, Number(h.split("/")[1]));
  if (h.startsWith("compare/")) {
    const [, a, b] = h.split("/");
    return showCompare(app, Number(a), Number(b));
  }
  return showList(app, parseQuery(h.startsWith("list") ? h.slice(5) : ""));
}
function parseQuery(q) {
  const out = {};
  for (const part of q.split("&")) {
    if (!part) continue;
    const i = part.indexOf("=");
    out[part.slice(0, i < 0 ? part.length : i)] = i < 0 ? "" : part.slice(i + 1);
  }
  return out;
}
function listHash(f) {
  const parts = Object.entries(f).filter(([, v]) => v !== "" && v !== undefined).map(([k, v]) => `${k}=${encodeURIComponent(v)}`);
  return "#list" + (parts.length ? "?" + parts.join("&") : "");
}

// -- the list ------------------------------------------------------------------------------------
const FILTERS = [
  ["run", "Run"], ["category", "Category"], ["condition", "Condition"], ["model", "Model"], ["seed", "Seed"],
  ["judge", "Judge"], ["termination", "Ended"],
];
const LEAKED = {"": "any", yes: "leaked", no: "not leaked", unknown: "unknown (judge failed)"};

function matches(row, f, skip) {
  for (const [k] of FILTERS) {
    if (k === skip || f[k] === undefined || f[k] === "") continue;
    if (k === "judge") {
      if (f.judge === "*") continue;
      if (f.judge === "own" ? row.judge !== run(row.run).own_judge : String(row.judge) !== f.judge) return false;
      continue;
    }
    const allowed = f[k].split(",");
    if (!allowed.includes(String(row[k]))) return false;
  }
  if (skip !== "leaked" && f.leaked) {
    const v = row.leaked === true ? "yes" : row.leaked === false ? "no" : "unknown";
    if (v !== f.leaked) return false;
  }
  if (f.judge_failed === "1" && !row.judge_failed) return false;
  if (f.context_cut === "1" && !row.context_cut) return false;
  return true;
}
function defaults(f) {
  const judges = new Set(INDEX.rows.map((r) => r.judge));
  return {judge: judges.size > 1 ? "own" : "*", ...f};
}
function ordered(key, values) {
  const order = [];
  for (const r of INDEX.runs) order.push(...(key === "condition" ? r.conditions : key === "category" ? r.categories : []));
  const rank = (v) => { const i = order.indexOf(v); return i < 0 ? order.length : i; };
  return [...values].sort((a, b) => rank(a) - rank(b) || (typeof a === "number" ? a - b : String(a).localeCompare(String(b))));
}

function showList(app, query) {
  const f = defaults(query);
  const rows = INDEX.rows.filter((r) => matches(r, f));
  const sort = f.sort || "key";
  const desc = f.desc === "1";
  rows.sort((a, b) => {
    const x = a[sort], y = b[sort];
    const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return desc ? -c : c;
  });
  const r0 = INDEX.runs[0];
  const controls = el("form", {class: "filters", onsubmit: (e) => e.preventDefault()});
  for (const [k, label] of FILTERS) {
    const base = INDEX.rows.filter((r) => matches(r, f, k));
    const counts = new Map();
    for (const r of base) counts.set(r[k], (counts.get(r[k]) || 0) + 1);
    const values = ordered(k, new Set(INDEX.rows.map((r) => r[k])));
    if (values.length < 2 && k !== "condition" && k !== "category") continue;
    const name = k === "condition" ? r0.condition_label : k === "category" ? r0.category_label : label;
    const sel = el("select", {name: k, "data-filter": k, onchange: (e) => { location.hash = listHash({...f, [k]: e.target.value}); }});
    if (k === "judge") {
      sel.append(el("option", {value: "own", text: "each run's own"}), el("option", {value: "*", text: "all judges"}));
    } else {
      sel.append(el("option", {value: "", text: `all (${base.length})`}));
    }
    for (const v of values) sel.append(el("option", {value: String(v), text: `${v} (${counts.get(v) || 0})`}));
    sel.value = f[k] || "";
    controls.append(el("label", {}, name + " ", sel));
  }
  const leak = el("select", {name: "leaked", "data-filter": "leaked", onchange: (e) => { location.hash = listHash({...f, leaked: e.target.value}); }});
  const leakBase = INDEX.rows.filter((r) => matches(r, f, "leaked"));
  for (const [v, t] of Object.entries(LEAKED)) {
    const n = v === "" ? leakBase.length : leakBase.filter((r) => (r.leaked === true ? "yes" : r.leaked === false ? "no" : "unknown") === v).length;
    leak.append(el("option", {value: v, text: `${t} (${n})`}));
  }
  leak.value = f.leaked || "";
  controls.append(el("label", {}, "Leakage ", leak));
  for (const [k, t] of [["judge_failed", "judge failed"], ["context_cut", "context cut"]]) {
    const box = el("input", {type: "checkbox", name: k, "data-filter": k, onchange: (e) => { location.hash = listHash({...f, [k]: e.target.checked ? "1" : ""}); }});
    box.checked = f[k] === "1";
    controls.append(el("label", {class: "check"}, box, " " + t));
  }
  controls.append(el("a", {href: "#list", class: "reset", text: "reset"}));

  const leaked = rows.filter((r) => r.leaked === true).length;
  const failed = rows.filter((r) => r.judge_failed).length;
  const summary = el("p", {id: "count", class: "count"},
    `${rows.length} of ${INDEX.rows.length} simulations shown · ${leaked} leaked · ${failed} with a failed judge call`);

  const cols = [["n", "#"], ["scenario", "Scenario"], ["category", r0.category_label], ["condition", r0.condition_label],
    ["model", "Model"], ["seed", "Seed"], ["judge", "Judge"], ["termination", "Ended"], ["n_leaks", "Leaks"],
    ["n_messages", "Messages"]];
  const head = el("tr", {}, cols.map(([k, t]) => el("th", {},
    el("a", {href: listHash({...f, sort: k, desc: sort === k && !desc ? "1" : ""}), text: t + (sort === k ? (desc ? " ▾" : " ▴") : "")}))),
    el("th", {text: "Flags"}));
  const body = el("tbody");
  const table = el("table", {class: "list", id: "list"}, el("thead", {}, head), body);
  let shown = 0;
  const more = el("button", {type: "button", class: "more", onclick: () => addRows()});
  function addRows() {
    for (const r of rows.slice(shown, shown + PAGE)) {
      const leaks = r.leaked === null ? badge(null, "failed") : r.n_leaks ? el("span", {class: "badge full", text: String(r.n_leaks)}) : el("span", {class: "badge none", text: "0"});
      const flags = [r.judge_failed ? "judge failed" : "", r.context_cut ? "context cut" : "", r.error ? "error" : ""].filter(Boolean).join(", ");
      body.append(el("tr", {class: r.leaked ? "leaked" : ""},
        el("td", {}, el("a", {href: `#sim/${r.n}`, text: String(r.n)})),
        el("td", {}, el("a", {href: `#sim/${r.n}`, text: r.title})),
        el("td", {text: r.category}), el("td", {text: r.condition}), el("td", {text: r.model}), el("td", {text: r.seed}),
        el("td", {text: r.judge}), el("td", {text: r.termination}), el("td", {}, leaks), el("td", {text: r.n_messages}),
        el("td", {class: "flags", text: flags})));
    }
    shown = Math.min(rows.length, shown + PAGE);
    more.textContent = `show ${Math.min(PAGE, rows.length - shown)} more of ${rows.length - shown}`;
    more.hidden = shown >= rows.length;
  }
  addRows();
  app.append(controls, summary, el("div", {class: "scroll"}, table), more);
}

// -- one simulation ------------------------------------------------------------------------------
function loadSim(n) {
  if (SIMS.has(n)) return Promise.resolve(SIMS.get(n));
  return new Promise((resolve, reject) => {
    if (!WAITING.has(n)) {
      WAITING.set(n, []);
      const s = document.createElement("script");
      s.src = `data/sims/${Number(n)}.js`;
      s.onerror = () => reject(new Error(`simulation ${n} not found`));
      document.body.append(s);
    }
    WAITING.get(n).push(resolve);
  });
}

function nameOf(sim) {
  const names = new Map(sim.participants.map((p) => [p.id, p.name]));
  return (id) => names.get(id) || id;
}

function simView(sim, n, compact) {
  const name = nameOf(sim);
  const row = INDEX.rows[n] || {};
  const r = run(sim.run);
  const carried = new Map();  // entry index -> worst level carried
  for (const lb of sim.labels) for (const i of lb.messages) {
    const was = carried.get(i);
    if (was !== "full") carried.set(i, lb.level === "full" ? "full" : "partial");
  }
  const facts = el("dl", {class: "facts"},
    ...[["Run", sim.run], [r.category_label, sim.category], [r.condition_label, sim.condition], ["Model", sim.model],
      ["Seed", sim.seed_index], ["Judge", sim.judge || "—"], ["Ended", sim.termination]].flatMap(([k, v]) => [el("dt", {text: k}), el("dd", {text: v})]));
  const out = el("section", {class: "sim", "data-sim": n},
    el("h2", {}, sim.title || sim.scenario, " ", el("span", {class: "muted", text: `#${n}`})), facts);
  if (sim.error) out.append(el("p", {class: "error", text: `simulation error: ${sim.error}`}));
  if (sim.task) out.append(el("p", {class: "task"}, el("strong", {text: "Task: "}), sim.task));

  out.append(el("h3", {text: "Participants"}), el("table", {class: "kv"}, el("tbody", {},
    sim.participants.map((p) => el("tr", {}, el("th", {text: p.name}), el("td", {text: [p.kind, p.note].filter(Boolean).join(" · ")}))))));

  out.append(el("h3", {text: "Private items"}));
  const items = el("tbody");
  for (const it of sim.items) {
    const mine = sim.labels.filter((lb) => lb.item === it.id);
    const levels = mine.length ? mine.map((lb) => el("span", {class: "pair"}, lb.recipient ? name(lb.recipient) + " " : "", badge(lb.level, lb.source))) : [el("span", {class: "muted", text: sim.unlabelled || "not judged"})];
    items.append(el("tr", {"data-item": it.id}, el("td", {text: it.id}), el("td", {text: name(it.owner)}), el("td", {text: it.text}),
      el("td", {text: it.forbidden.map(name).join(", ") || "—"}), el("td", {}, levels), el("td", {class: "muted", text: it.note})));
  }
  out.append(el("div", {class: "scroll"}, el("table", {class: "grid items"},
    el("thead", {}, el("tr", {}, ["Item", "Owner", "Text", "Must not reach", "Judged", "Note"].map((t) => el("th", {text: t})))), items)));

  out.append(el("h3", {text: "Judge labels"}));
  const labels = el("tbody");
  for (const lb of sim.labels) {
    const links = lb.messages.map((i) => el("a", {href: `#msg-${n}-${i}`, class: "msglink", text: `#${i}`, onclick: (e) => { e.preventDefault(); focusMsg(n, i); }}));
    labels.append(el("tr", {class: `label ${lb.source}`, "data-level": lb.level ?? "failed"},
      el("td", {text: lb.judge}), el("td", {text: lb.item || "—"}), el("td", {text: lb.recipient ? name(lb.recipient) : "—"}),
      el("td", {}, badge(lb.level, lb.source)), el("td", {class: "evidence", text: lb.failure || lb.evidence || ""}),
      el("td", {}, links.length ? links : (lb.level === "partial" || lb.level === "full") && lb.evidence ? el("span", {class: "muted", text: "evidence not found in a message"}) : "—"),
      el("td", {class: "muted", text: `${lb.source === "rule" ? "rule" : lb.judge_model || "?"}${lb.rubric_hash ? " · rubric " + lb.rubric_hash : ""}`})));
  }
  if (!sim.labels.length) labels.append(el("tr", {}, el("td", {colspan: 7, class: "muted", text: "no judge labels (not judged yet)"})));
  out.append(el("div", {class: "scroll"}, el("table", {class: "grid labels"},
    el("thead", {}, el("tr", {}, ["Judge", "Item", "Recipient", "Level", "Evidence / failure", "Carried by", "Labelled by"].map((t) => el("th", {text: t})))), labels)));

  out.append(el("h3", {text: "Conversation"}));
  const conv = el("ol", {class: "conversation"});
  for (const m of sim.messages) {
    const level = carried.get(m.index);
    const li = el("li", {id: `msg-${n}-${m.index}`, class: `msg ${m.kind}${level ? " carried-" + level : ""}`},
      el("div", {class: "meta"}, `#${m.index} · round ${m.round} · `, el("strong", {text: name(m.sender)}),
        m.recipients.length ? ` → ${m.recipients.map(name).join(", ")}` : "", m.channel ? ` · ${m.channel}` : "",
        m.kind !== "message" ? el("span", {class: "kind", text: m.kind}) : "", level ? el("span", {class: `badge ${level}`, text: `carries a ${level} leak`}) : ""),
      m.content ? el("div", {class: "content", text: m.content}) : null,
      m.note ? el("div", {class: "note", text: m.note}) : null);
    for (const src of m.images || []) {
      const ok = safeImage(src);
      if (ok) li.append(el("img", {src: ok, alt: `image in message ${m.index}`}));
    }
    conv.append(li);
  }
  if (!sim.messages.length) conv.append(el("li", {class: "muted", text: "no messages"}));
  out.append(conv);

  for (const p of sim.panels) {
    out.append(el("h3", {text: p.title}), el("table", {class: "kv"}, el("tbody", {},
      p.rows.map(([k, v]) => el("tr", {}, el("th", {text: k}), el("td", {text: v}))))));
  }
  if (!compact && row) {
    const others = INDEX.rows.filter((o) => o.run === row.run && o.scenario === row.scenario && o.n !== n);
    if (others.length) {
      const sel = el("select", {id: "compare-with", onchange: (e) => { if (e.target.value) location.hash = `#compare/${n}/${e.target.value}`; }},
        el("option", {value: "", text: "compare side by side with…"}),
        others.map((o) => el("option", {value: String(o.n), text: `${r.condition_label} ${o.condition} · ${o.model} · seed ${o.seed} · judge ${o.judge}`})));
      out.querySelector(".facts").after(el("p", {class: "compare"}, sel));
    }
  }
  return out;
}

function focusMsg(n, i) {
  const target = document.getElementById(`msg-${n}-${i}`);
  if (!target) return;
  target.scrollIntoView({block: "center"});
  target.classList.add("focus");
  setTimeout(() => target.classList.remove("focus"), 1500);
}

function nav(extra) {
  const r = INDEX.runs[0];
  return el("nav", {class: "crumbs"}, el("a", {href: "#list", text: "← all simulations"}),
    r.report ? el("a", {href: r.report, text: "report"}) : null, extra || null);
}

async function showSim(app, n) {
  app.append(nav());
  try {
    const sim = await loadSim(n);
    app.append(simView(sim, n, false));
  } catch (e) {
    app.append(el("p", {class: "error", text: String(e.message || e)}));
  }
}

async function showCompare(app, a, b) {
  app.append(nav(el("a", {href: `#sim/${a}`, text: `only #${a}`})));
  const [x, y] = await Promise.all([loadSim(a), loadSim(b)]);
  app.append(el("div", {class: "side-by-side"}, simView(x, a, true), simView(y, b, true)));
}

function header() {
  const runs = document.getElementById("runs");
  runs.replaceChildren(...INDEX.runs.map((r) => el("span", {class: "run"}, `${r.title} · ${r.id} `,
    r.report ? el("a", {href: r.report, text: "report"}) : null)));
}

function start() {
  header();
  window.addEventListener("hashchange", route);
  route();
}

window.addEventListener("load", () => {
  if (!INDEX) document.getElementById("app").replaceChildren(el("p", {class: "error", text: "data/index.js did not load"}));
});
