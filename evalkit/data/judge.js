// The judging workbench's view (anywidget ESM). It draws the state Python sends (model "view") and sends
// back actions; every rule lives in evalkit/judging.py. Data is only ever set as text (textContent, value,
// an image's data: URL), never as markup.

const KEYS = {"0": ["grade", 0], "1": ["grade", 1], "2": ["grade", 2], "3": ["grade", 3],
              "s": ["skip"], "u": ["undo"], "j": ["move", 1], "k": ["move", -1], "ArrowDown": ["move", 1],
              "ArrowUp": ["move", -1], "ArrowRight": ["move", 1], "ArrowLeft": ["move", -1], "i": ["image"], "w": ["whole"], "Escape": ["unfind"],
              "p": ["pool"], "d": ["draft"], "]": ["query", 1], "[": ["query", -1]};

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) if (c) node.append(c);
  return node;
}

function field(label, input) {
  return h("label", {class: "ek-field"}, h("span", {text: label}), input);
}

function queryForm(view, send) {
  const q = view.query || {};
  const id = h("input", {class: "ek-qid", size: "10"}); id.value = q.id || "";
  const cls = h("select", {class: "ek-qclass"});
  for (const c of view.classes) { const o = h("option", {text: c}); o.value = c; cls.append(o); }
  cls.value = q.class || "needle";
  const text = h("textarea", {class: "ek-qtext", rows: "2", cols: "70"}); text.value = q.text || "";
  const kind = h("select", {class: "ek-qkind"});
  for (const c of ["", ...view.kinds]) { const o = h("option", {text: c || "(kind)"}); o.value = c; kind.append(o); }
  kind.value = q.kind || "";
  const distractor = h("input", {class: "ek-qdistractor", size: "24", placeholder: "distractor document"});
  distractor.value = q.distractor || "";
  const save = h("button", {class: "ek-save", text: "Save query"});
  save.onclick = () => send({action: "write", id: id.value, class: cls.value, text: text.value,
                             kind: kind.value, distractor: distractor.value});
  const fresh = h("button", {class: "ek-new", text: "New query"});
  fresh.onclick = () => send({action: "new"});
  return h("div", {class: "ek-form"}, field("id", id), field("class", cls), field("kind", kind),
           field("distractor", distractor), h("br"), text, h("br"), save, fresh);
}

function searchBar(view, send) {
  // "/" focuses it; Enter searches the corpus outside the pool with the arm named (the first pooled arm if blank)
  const text = h("input", {class: "ek-find", size: "40", placeholder: "/ search the corpus outside the pool (Enter)"});
  const arm = h("input", {class: "ek-find-arm", size: "18", placeholder: `arm: ${view.search_arm}`});
  const go = (e) => {
    if (e.key === "Enter") { e.preventDefault(); send({action: "find", text: text.value, arm: arm.value}); }
    if (e.key === "Escape") { e.preventDefault(); e.target.blur(); }
  };
  text.onkeydown = go; arm.onkeydown = go;
  const state = view.found ? `${view.found.n} page(s) found by ${view.found.arm}, outside the pool — Esc: back to the pool` : "";
  return h("div", {class: "ek-search"}, text, arm, state ? h("span", {class: "ek-found", text: state}) : null);
}

function draftView(view, send) {
  // the stream of drafts: a accept · t edit the text, Enter accepts it · x reject · c the class offered · d or Esc: back
  const dv = view.draft, d = dv.current;
  const balance = Object.entries(dv.balance).map(([c, [n, left]]) => `${c} ${n} (+${left} drafts)`).join(" · ");
  const head = h("div", {class: "ek-draft-head", text: `drafts${dv.class ? " of class " + dv.class : ""}: ${dv.left} left — queries per class: ${balance}`});
  if (!d) return h("div", {class: "ek-drafts"}, head, h("div", {class: "ek-empty", text: "No draft left here: c for another class, d to go back."}));
  const text = h("textarea", {class: "ek-draft-text", rows: "2", cols: "70"}); text.value = d.text;
  text.onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send({action: "draft_accept", text: text.value}); }
    if (e.key === "Escape") { e.preventDefault(); text.blur(); }
  };
  const about = [`${d.id} [${d.class}${d.kind ? ", " + d.kind : ""}]`, `source: ${d.source}`,
                 d.distractor ? `distractor: ${d.distractor}` : "", d.pages.length ? `pages to read first: ${d.pages.join(", ")}` : "",
                 d.context ? `context: ${d.context}` : ""].filter(Boolean);
  return h("div", {class: "ek-drafts"}, head, lines("ek-draft-about", about), text,
           h("div", {class: "ek-draft-keys", text: "a accept · t edit (Enter accepts) · x reject · c class · d back"}));
}

function lines(cls, items) {
  const list = h("ul", {class: cls});
  for (const t of items) list.append(h("li", {text: t}));
  return list;
}

function decideView(view) {
  // "can I decide yet?": what the gate can say now, per rule, and what to grade next (computed after a grade)
  const d = view.decide;
  if (!d) return null;
  const head = h("div", {class: "ek-decide-head"}, h("b", {text: "can I decide yet? "}),
    h("span", {class: `ek-decide-${d.status || "error"}`, text: d.error || {pass: "yes: the gate passes", fail: "yes: the gate fails", undecided: "not yet"}[d.status]}));
  if (d.error) return h("div", {class: "ek-decide"}, head);
  return h("div", {class: "ek-decide"}, head, lines("ek-decide-rules", d.rules.map(([rule, status]) => `${status}: ${rule}`)),
    d.grade ? h("div", {class: "ek-decide-grade", text: d.grade}) : null,
    d.next ? h("div", {class: "ek-decide-next", text: `grade next: ${d.next}`}) : null);
}

function judgeView(view) {
  // the local judge: who it is, how far it agrees with the person, where it is refused (never a page's opinion)
  const j = view.judge;
  if (!j) return null;
  return h("details", {class: "ek-judge"}, h("summary", {text: `the judge — ${j.summary}`}),
    h("div", {class: "ek-judge-id", text: j.identity}), lines("ek-judge-classes", j.classes));
}

function pageView(view) {
  const item = view.item;
  if (!item) return h("div", {class: "ek-empty", text: view.query ? "Nothing left to read: press p to pool, ] for the next query." : "Write a query (or press d for a draft)."});
  const head = h("div", {class: "ek-head", text: `${item.id}   ${view.position}   grade: ${item.gain === null ? "—" : item.gain}${item.skipped ? "   (skipped)" : ""}`});
  const again = item.reread ? `graded ${item.gain} under the earlier wording "${item.reread}": read it again and grade it for this one`
                            : item.previous ? `previous grade: ${item.previous}` : "";
  const shown = view.display === "passage" ? view.passages : [view.segments];
  const texts = shown.map((segments) => {
    const text = h("pre", {class: view.display === "passage" ? "ek-text ek-passage" : "ek-text"});
    for (const [run, marked] of segments) text.append(marked ? h("mark", {text: run}) : document.createTextNode(run));
    return text;
  });
  const display = h("div", {class: "ek-display", text: view.display === "passage"
    ? `the page's best-matching passages (${shown.length}) — w: the whole page`
    : view.short ? "the whole page (short enough to be its own passage)" : "the whole page — w: back to its passages"});
  const parts = [head, display, ...texts];
  if (item.judge) parts.splice(1, 0, h("div", {class: "ek-opinion", text: item.judge}));
  if (item.evidence) parts.splice(1, 0, h("div", {class: "ek-evidence", text: `evidence${item.kept ? " (kept: stored with the grade)" : ""}: ${item.evidence}`}));
  if (again) parts.splice(1, 0, h("div", {class: "ek-reread", text: again}));
  if (view.image) parts.push(h("img", {class: "ek-image", src: `data:image/png;base64,${view.image}`, alt: item.id}));
  return h("div", {class: "ek-page"}, ...parts);
}

function draw(el, model, send) {
  const view = model.get("view");
  const notes = h("textarea", {class: "ek-notes", rows: "1", cols: "60", placeholder: "n: a note on this page (Enter saves)"});
  notes.value = (view.item && view.item.notes) || "";
  notes.onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send({action: "note", text: notes.value}); el.focus(); }
    if (e.key === "Escape") el.focus();
  };
  const rubric = h("div", {class: "ek-rubric"}, lines("ek-gains", Object.entries(view.rubric).sort((a, b) => b[0] - a[0]).map(([g, t]) => `${g}: ${t}`)));
  rubric.style.display = view.show_rubric ? "block" : "none";
  const judged = Object.entries(view.judged_at).map(([arm, v]) => `${arm} ${(100 * v).toFixed(0)}%`).join(" · ");
  el.replaceChildren(...[
    h("div", {class: "ek-top", text: `${view.file} — ${view.query ? view.query.id : "no query"} — ${view.left} left to read — keys: 0-3 grade · e evidence (select text first) · n note · s skip · u undo · j/k next/previous · w whole page/passages · / search outside the pool · i image · p pool · d drafts (a accept · t edit · x reject · c class) · [ ] query · ? rubric`}),
    view.message ? h("div", {class: "ek-message", text: view.message}) : null,
    decideView(view), judgeView(view),
    queryForm(view, send), searchBar(view, send),
    view.before.length ? h("div", {class: "ek-before"}, h("b", {text: "before judging"}), lines("ek-before-list", view.before)) : null,
    view.problems.length ? h("div", {class: "ek-problems"}, h("b", {text: "qrels check --strict"}), lines("ek-problem-list", view.problems)) : null,
    judged ? h("div", {class: "ek-judged", text: `Judged@10: ${judged}`}) : null,
    rubric, view.draft ? draftView(view, send) : pageView(view), notes].filter(Boolean));
  el._notes = notes;
}

function render({model, el}) {
  el.tabIndex = 0;
  el.classList.add("ek-workbench");
  el.setAttribute("data-lm-suppress-shortcuts", "true");  // JupyterLab's own keys (j, k, 0-3) stay out of it
  const style = h("style", {text: `
    .ek-workbench { font: 13px/1.4 sans-serif; outline: none; border: 1px solid #ccc; padding: 8px; }
    .ek-workbench:focus { border-color: #36c; }
    .ek-top { font-weight: bold; margin-bottom: 4px; }
    .ek-message { background: #fff3cd; padding: 4px; }
    .ek-problems { color: #a00; } .ek-before { color: #850; }
    .ek-field { margin-right: 8px; } .ek-field span { margin-right: 4px; color: #555; }
    .ek-text { white-space: pre-wrap; max-height: 420px; overflow: auto; background: #fafafa; border: 1px solid #ddd; padding: 6px; user-select: text; }
    .ek-text mark { background: #ffe066; }
    .ek-passage { max-height: none; border-left: 3px solid #36c; } .ek-display { color: #555; font-style: italic; }
    .ek-search { margin: 4px 0; } .ek-found { color: #06c; margin-left: 8px; }
    .ek-drafts { border: 1px solid #9c6; padding: 6px; margin-top: 6px; } .ek-draft-head { font-weight: bold; }
    .ek-head { font-family: monospace; margin-top: 6px; } .ek-evidence { color: #060; } .ek-reread { color: #850; }
    .ek-image { max-width: 100%; border: 1px solid #ccc; }
    .ek-decide { border-left: 3px solid #9a6700; padding: 2px 6px; margin: 4px 0; } .ek-decide ul { margin: 2px 0; }
    .ek-decide-pass { color: #1a7f37; font-weight: bold; } .ek-decide-fail { color: #cf222e; font-weight: bold; }
    .ek-decide-undecided, .ek-decide-error { color: #9a6700; font-weight: bold; }
    .ek-judge { color: #444; margin: 2px 0; } .ek-opinion { color: #555; font-style: italic; }`});
  const body = h("div");
  el.append(style, body);
  const send = (msg) => model.send(msg);
  const redraw = () => draw(body, model, send);
  model.on("change:view", redraw);
  redraw();
  // the notebook may take focus on a click: keep the quote selected with the mouse, and the keys, here
  let selected = "";
  el.addEventListener("mouseup", () => {
    const sel = window.getSelection();
    const at = sel && sel.rangeCount ? sel.getRangeAt(0).commonAncestorContainer : null;
    const inText = at && el.contains(at) && (at.nodeType === 1 ? at : at.parentElement).closest(".ek-text");
    selected = inText ? sel.toString() : "";
    if (!["INPUT", "TEXTAREA", "SELECT", "BUTTON"].includes(document.activeElement?.tagName)) el.focus({preventScroll: true});
  });
  el.addEventListener("keydown", (e) => {
    const tag = e.target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || e.ctrlKey || e.metaKey || e.altKey) return;
    let msg = null;
    const view = model.get("view");
    if (view.draft && ["a", "t", "x", "c", "Escape"].includes(e.key)) {
      if (e.key === "t") { e.preventDefault(); e.stopPropagation(); el.querySelector(".ek-draft-text")?.focus(); return; }
      const classes = ["", ...view.classes];
      msg = e.key === "a" ? {action: "draft_accept"} : e.key === "x" ? {action: "draft_reject"}
          : e.key === "c" ? {action: "draft_class", value: classes[(classes.indexOf(view.draft.class) + 1) % classes.length]}
          : {action: "draft"};
    } else if (view.draft && e.key !== "d" && e.key !== "u" && e.key !== "?") {
      return;  // in the stream of drafts, the page keys do nothing
    } else if (e.key === "e") {
      const sel = window.getSelection();
      msg = {action: "evidence", text: (sel && sel.toString()) || selected};
    } else if (e.key === "n") {
      e.preventDefault(); body._notes.focus(); e.stopPropagation(); return;
    } else if (e.key === "/") {
      e.preventDefault(); el.querySelector(".ek-find").focus(); e.stopPropagation(); return;
    } else if (e.key === "?") {
      msg = {action: "rubric"};
    } else if (KEYS[e.key]) {
      const [action, value] = KEYS[e.key];
      msg = {action, value};
    }
    if (msg) { e.preventDefault(); e.stopPropagation(); send(msg); }
  });
  el.focus();
}

export default { render };
