// @ts-check
import { LTText } from "./text.js";
/** @import { LTComparison } from "./compare.js" */
/** @import { LTStep } from "./payload.js" */
/** @import { PageState } from "./state.js" */
/** @import { LTDetailView } from "./view.js" */
/**
 * A comparison shown (LTCompareView.create): the row shown, and ways to show another.
 * @typedef {Object} LTComparisonView
 * @property {(index: number|"source") => void} select
 * @property {(delta: number, onlyDiffering: boolean) => void} move  j / k / n
 * @property {(at?: number|"source"|null) => void} start  at a row, else the first divergence, else the first difference
 * @property {() => number|"source"|null} current
 */
// A comparison shown: the verdict and first divergence, the two aligned pass lists, and per
// aligned pass the A-vs-B diff of outputs (or a one-sided pass's own diff); the generated
// sources side by side last. Used by the comparison page (diff --html) and the run report.
export const LTCompareView = (() => {
  const { el } = LTText;
  const SOURCE = "source";
  let made = 0;

  const passText = (step) => (step ? `#${step.seq} ${step.name}` : "");

  function rowClass(row) {
    if (!row.a) return "only-b";
    if (!row.b) return "only-a";
    if (row.sameInput && row.sameOutput) return "same";
    return row.sameInput ? "differs" : "input-differs";
  }
  const MARK = { same: "=", differs: "≠", "input-differs": "~", "only-a": "A", "only-b": "B" };
  const LEGEND = "= same · ≠ same input, other output · ~ other input · A / B one side only";
  const WHAT = {
    same: "same input, same output",
    differs: "same input, different output: this pass behaves differently",
    "input-differs": "different input (the compiles parted earlier)",
    "only-a": "runs in A only",
    "only-b": "runs in B only",
  };

  // Which side changed the IR on an aligned row where the other side's pass did nothing (compare.py's changed_only_on).
  function changedOnlyOn(row) {
    if (!row.a || !row.b) return null;
    if (row.a.status === "changed" && row.b.status === "unchanged") return "A";
    if (row.a.status === "unchanged" && row.b.status === "changed") return "B";
    return null;
  }

  function verdict(cmp) {
    if (cmp.identical) return "identical: every aligned pass got and made the same IR, and the generated source is the same";
    if (cmp.equivalent) return `the same up to renaming: every aligned pass got and made the same IR, and the generated source is the same, once B's names are written as A's: ${cmp.renamed}`;
    const d = cmp.divergence;
    if (!d) return "every aligned pass got and made the same IR; the generated sources differ";
    if (d.kind === "input") return "first divergence: the kernels differ before the first pass (other kernels, or other variants)";
    if (d.kind === "behaves differently") {
      const failed = d.a.status === "failed" ? "A" : d.b.status === "failed" ? "B" : "";
      if (failed) return `first divergence: A ${passText(d.a)} / B ${passText(d.b)} got the same IR; it failed in ${failed}, not in ${failed === "A" ? "B" : "A"}`;
      return `first divergence: A ${passText(d.a)} / B ${passText(d.b)} got the same IR and made different IR`;
    }
    const side = d.a ? "A" : "B";
    return `first divergence: ${passText(d.a || d.b)} runs in ${side} only and changes the IR`;
  }

  // container: where to build; view: an LTView (its diffView / irView); labels: ["A …", "B …"].
  /**
   * @param {HTMLElement} container
   * @param {LTComparison} cmp
   * @param {LTDetailView} view
   * @param {string[]} labels
   * @param {PageState} state  cmpHideSame read and written; cmpRow set to each row shown
   * @returns {LTComparisonView}
   */
  function create(container, cmp, view, labels, state) {
    const rowsOf = () => cmp.rows.map((row, i) => ({ ...row, index: i, cls: rowClass(row) }));
    const all = rowsOf();
    let current = null;
    // The view's diffs cache by (before, after) key: keys unique to this comparison and side.
    const uid = ++made;
    const extra = new Map(); // key -> text, for the sources
    const key = (s, digest) => `${uid}\u0001${s}\u0001${digest}`;
    const pair = { snap: (k) => (extra.has(k) ? extra.get(k) : cmp.text(Number(k.split("\u0001")[1]), k.split("\u0001")[2])) };

    container.replaceChildren();
    const root = el("section", "cmp");
    const summary = el("div", "cmp-summary");
    summary.appendChild(el("div", "cmp-side", `A: ${labels[0]}`));
    summary.appendChild(el("div", "cmp-side", `B: ${labels[1]}`));
    if (cmp.configs) summary.appendChild(el("div", "cmp-configs", `pass configs differ: ${cmp.configs}`));
    const verdictLine = el("div", `cmp-verdict ${cmp.equivalent ? "identical" : "differs"}`, verdict(cmp));
    summary.appendChild(verdictLine);
    if (cmp.divergence && cmp.divergence.row >= 0) {
      const go = el("button", "cmp-go", "go to the first divergence");
      go.type = "button";
      go.addEventListener("click", () => select(cmp.divergence.row));
      summary.appendChild(go);
    }
    const onlyA = all.filter((r) => r.cls === "only-a").length, onlyB = all.filter((r) => r.cls === "only-b").length;
    summary.appendChild(el("div", "muted", `${all.length} aligned rows · only in A: ${onlyA} · only in B: ${onlyB} · generated source: ${cmp.sameSource ? "the same" : "differs"}`));
    for (const [side, other] of [["A", "B"], ["B", "A"]]) {
      const changed = all.filter((r) => changedOnlyOn(r) === side);
      if (!changed.length) continue;
      const line = el("div", "cmp-one-changed");
      line.appendChild(document.createTextNode(`changed the IR in ${side}, did nothing in ${other} (${changed.length}): `));
      changed.forEach((r, i) => {
        const go = el("button", "cmp-jump", passText(side === "A" ? r.a : r.b));
        go.type = "button";
        go.dataset.row = String(r.index);
        go.addEventListener("click", () => select(r.index));
        if (i) line.appendChild(document.createTextNode(", "));
        line.appendChild(go);
      });
      summary.appendChild(line);
    }
    root.appendChild(summary);

    const body = el("div", "cmp-body");
    const side1 = el("div", "cmp-list");
    const bar = el("div", "cmp-bar");
    const hide = el("input");
    hide.type = "checkbox";
    hide.className = "cmp-hide-same";
    hide.checked = state.cmpHideSame;
    const hideLabel = el("label");
    hideLabel.appendChild(hide);
    hideLabel.appendChild(document.createTextNode(" hide same"));
    bar.appendChild(hideLabel);
    const count = el("span", "cmp-count muted");
    bar.appendChild(count);
    side1.appendChild(bar);
    side1.appendChild(el("div", "cmp-legend muted", LEGEND));
    const head = el("div", "cmp-row cmp-head");
    head.appendChild(el("span", "cmp-a", "A"));
    head.appendChild(el("span", "cmp-mark", ""));
    head.appendChild(el("span", "cmp-b", "B"));
    side1.appendChild(head);
    const list = el("div", "cmp-rows");
    side1.appendChild(list);
    body.appendChild(side1);
    const detail = el("div", "cmp-detail");
    body.appendChild(detail);
    root.appendChild(body);
    container.appendChild(root);

    const visible = () => all.filter((r) => !state.cmpHideSame || r.cls !== "same" || (cmp.divergence && r.index === cmp.divergence.row));

    function cell(cls, step) {
      const span = el("span", `${cls}${step && step.status === "failed" ? " failed" : ""}`, step ? `${step.seq} ${step.name}` : "");
      if (step) {
        span.style.paddingLeft = `${(step.depth || 0) * 12}px`;
        span.title = LTText.visible(`${step.name} (${step.phase || ""})`);
      }
      return span;
    }

    function renderList() {
      list.replaceChildren();
      const shown = visible();
      const frag = document.createDocumentFragment();
      for (const row of shown) {
        const only = changedOnlyOn(row);
        const button = el("button", `cmp-row ${row.cls}${only ? ` changed-in-${only.toLowerCase()}` : ""}${row.index === current ? " active" : ""}`);
        button.type = "button";
        button.dataset.row = String(row.index);
        button.title = WHAT[row.cls] + (only ? ` · changed the IR in ${only} only (a no-op in ${only === "A" ? "B" : "A"})` : "");
        button.appendChild(cell("cmp-a", row.a));
        button.appendChild(el("span", "cmp-mark", MARK[row.cls]));
        button.appendChild(cell("cmp-b", row.b));
        frag.appendChild(button);
      }
      const source = el("button", `cmp-row source ${cmp.sameSource ? "same" : "differs"}${current === SOURCE ? " active" : ""}`);
      source.type = "button";
      source.dataset.row = SOURCE;
      source.appendChild(el("span", "cmp-a", "generated source"));
      source.appendChild(el("span", "cmp-mark", cmp.sameSource ? "=" : "≠")); // the end of both pipelines
      source.appendChild(el("span", "cmp-b", "generated source"));
      frag.appendChild(source);
      list.appendChild(frag);
      count.textContent = `${shown.length} of ${all.length} rows shown`;
    }

    function renderDetail() {
      detail.replaceChildren();
      if (current === SOURCE) return renderSources();
      const row = all[current];
      if (!row) return;
      const head = el("div", "detail-head");
      head.appendChild(el("h2", "", row.a && row.b ? `A ${passText(row.a)} · B ${passText(row.b)}` : `${passText(row.a || row.b)} (${row.a ? "A" : "B"} only)`));
      const only = changedOnlyOn(row);
      const note = only ? ` · changed the IR in ${only}, a no-op in ${only === "A" ? "B" : "A"}` : "";
      head.appendChild(el("div", "meta", WHAT[row.cls] + note + (cmp.divergence && cmp.divergence.row === row.index ? " · the first divergence" : "")));
      detail.appendChild(head);
      for (const [label, step] of /** @type {Array<[string, LTStep|null]>} */ ([["A", row.a], ["B", row.b]])) {
        if (step && step.error) {
          detail.appendChild(el("h3", "", `${label}: ${step.name} failed`));
          detail.appendChild(view.errorBox(step.error));
        }
      }
      if (!row.a || !row.b) {
        const step = row.a || row.b, s = row.a ? 0 : 1;
        if (step.status === "changed") detail.appendChild(view.diffView(pair, { before: key(s, step.before), after: key(s, step.after) }, { names: [`before ${step.name}`, `after ${step.name}`] }));
        else detail.appendChild(el("p", "hint", step.status === "failed" ? "This pass failed." : "This pass left the IR unchanged."));
        return;
      }
      if (row.sameOutput) {
        detail.appendChild(el("p", "hint", "Both sides made the same IR here."));
        detail.appendChild(view.irView(cmp.text(0, row.a.after || row.a.before), "IR after (A = B)"));
        return;
      }
      detail.appendChild(el("h3", "", "A's output against B's"));
      detail.appendChild(view.diffView(pair, { before: key(0, row.a.after || row.a.before), after: key(1, row.b.after || row.b.before) }, { names: [`A after ${row.a.name}`, `B after ${row.b.name}`] }));
      if (!row.sameInput) {
        detail.appendChild(el("h3", "", "A's input against B's"));
        detail.appendChild(view.diffView(pair, { before: key(0, row.a.before), after: key(1, row.b.before) }, { names: [`A before ${row.a.name}`, `B before ${row.b.name}`], noFullIR: true }));
      }
    }

    function renderSources() {
      const head = el("div", "detail-head");
      head.appendChild(el("h2", "", "generated source"));
      head.appendChild(el("div", "meta", cmp.sameSource ? "the same on both sides" : "differs (A → B)"));
      detail.appendChild(head);
      for (const [role, a, b] of cmp.sources) {
        detail.appendChild(el("h3", "", `${role} source`));
        if (a !== null && b !== null && a !== b) {
          const [ka, kb] = [key("src", `${role}:a`), key("src", `${role}:b`)];
          extra.set(ka, a);
          extra.set(kb, b);
          detail.appendChild(view.diffView(pair, { before: ka, after: kb }, { names: [`A ${role}`, `B ${role}`], noFullIR: true }));
        }
        const panes = el("div", "panes");
        panes.appendChild(view.irView(a === null ? "" : a, a === null ? `A has no ${role} source` : `A ${role} source`));
        panes.appendChild(view.irView(b === null ? "" : b, b === null ? `B has no ${role} source` : `B ${role} source`));
        detail.appendChild(panes);
      }
    }

    function select(index) {
      current = index;
      renderList();
      const row = list.querySelector(".cmp-row.active");
      if (row) row.scrollIntoView({ block: "nearest" });
      renderDetail();
      state.cmpRow = index; // the page puts it in the URL
    }

    // j / k: next / previous row; n: the next row where a pass behaves differently or runs on one
    // side only (rows that only got other input follow from an earlier one), or the sources.
    function move(delta, onlyDiffering) {
      const order = [...visible().map((r) => r.index), SOURCE];
      let at = order.indexOf(current);
      for (;;) {
        at += delta;
        if (at < 0 || at >= order.length) return;
        const key = order[at];
        if (!onlyDiffering) break;
        if (key === SOURCE ? !cmp.sameSource : !["same", "input-differs"].includes(all[key].cls)) break;
      }
      select(order[at]);
    }

    list.addEventListener("click", (event) => {
      const button = LTText.closest(event, ".cmp-row");
      if (!button) return;
      select(button.dataset.row === SOURCE ? SOURCE : Number(button.dataset.row));
    });
    hide.addEventListener("change", () => {
      hide.blur();
      state.cmpHideSame = hide.checked;
      renderList();
    });

    const start = (at) => {
      if (at !== undefined && at !== null && (at === SOURCE || all[at])) return select(at);
      if (cmp.divergence && cmp.divergence.row >= 0) return select(cmp.divergence.row);
      const first = all.find((r) => r.cls !== "same");
      return select(first ? first.index : cmp.sameSource && all.length ? 0 : SOURCE);
    };
    return { select, move, start, current: () => current };
  }

  return { create, verdict, rowClass };
})();
