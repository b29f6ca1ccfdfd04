// @ts-check
import { LTText } from "./text.js";
/** @import { LTKernel, LTKernelSummary } from "./payload.js" */
// Where compile time goes, drawn as SVG by the page: a kernel's steps on one time line
// (nested passes inside their parents; the dark part of a bar is its self time) with the IR
// lines after each step, and a run's slowest passes over all kernels. The numbers come
// from Python (analysis/timing.py: each step's "self" and "at", each summary's "timing");
// the page only draws them. Clicking a bar opens that pass.
export const LTTiming = (() => {
  const { el, svg, plural, rules } = LTText;
  const ROW = 18, CHAR = 7.3, TOP = 26;
  const isCodegen = (step) => step.kind === "codegen";
  const labelOf = (step) => (isCodegen(step) ? `${step.role} codegen` : step.name);
  const ms = (value) => value.toFixed(2); // as `lower-trace show --timing` prints them
  const COL = 70, MIN_BAR = 120, MIN_NAME = 18; // px of a number column; the least a bar and a name get (chars)

  // Names get what the numbers and the smallest bar leave; longer ones end in "…" (whole in the tooltip).
  function nameRoom(longest, fixed, room) {
    const chars = Math.max(MIN_NAME, Math.min(longest, Math.floor((room - fixed - MIN_BAR) / CHAR)));
    return { chars, width: chars * CHAR };
  }
  const cut = (text, chars) => (text.length > chars ? `${text.slice(0, chars - 1)}…` : text);

  // The IR lines after a step (of the source, for codegen): Python's count (analysis/timing.py's
  // ir_lines, in the payload); none when it made none (a failed pass).
  const irLines = (step) => (step.lines === undefined ? null : step.lines);

  function toggle(labels, current, onPick) {
    const box = el("span", "timing-toggle");
    for (const [value, label] of labels) {
      const button = el("button", value === current ? "on" : "", label);
      button.type = "button";
      button.dataset.value = value;
      button.addEventListener("click", () => onPick(value));
      box.appendChild(button);
    }
    return box;
  }

  // One kernel: a row per step. order "run": in execution order, on the time line;
  // "self": slowest self time first, bars from zero.
  /**
   * @param {LTKernel} kernel
   * @param {(seq: number) => void} open  a bar's click
   * @param {"run"|"self"} [order]
   * @param {number} [room]
   * @param {(order: "run"|"self") => void} [onOrder]  told when the order is switched
   * @returns {HTMLElement}
   */
  function kernelChart(kernel, open, order = "run", room = 900, onOrder = () => {}) {
    const box = el("section", "timing");
    // Fields at their default are left out of the payload (model_json.to_json): a 0 ms step has no "ms".
    const steps = kernel.steps.map((s) => ({ ...s, ms: s.ms || 0, self: s.self || 0, at: s.at || 0 }));
    const top = steps.filter((s) => isCodegen(s) || !s.depth);
    const passMs = top.filter((s) => !isCodegen(s)).reduce((sum, s) => sum + (s.ms || 0), 0);
    const codegenMs = top.filter(isCodegen).reduce((sum, s) => sum + (s.ms || 0), 0);
    const slowest = [...steps].sort((x, y) => y.self - x.self || x.seq - y.seq)[0];
    box.appendChild(el("h2", "", `Timing · ${kernel.id} ${kernel.name}`));
    const between = Math.max(0, (kernel.ms || 0) - passMs - codegenMs);
    const total = (value) => value.toFixed(1); // the totals as show --timing's header prints them
    const facts = [`compile ${total(kernel.ms || 0)} ms`, `passes ${total(passMs)} ms`, `codegen ${total(codegenMs)} ms`, `between steps ${total(between)} ms (not drawn)`];
    if (slowest) facts.push(`slowest: ${labelOf(slowest)} (${ms(slowest.self)} ms self)`);
    const head = el("div", "timing-facts muted", facts.join(" · "));
    const redraw = (value) => { onOrder(value); box.replaceWith(kernelChart(kernel, open, value, room, onOrder)); };
    head.appendChild(toggle([["run", "in order"], ["self", "slowest first"]], order, redraw));
    box.appendChild(head);
    const rows = order === "self" ? [...steps].sort((x, y) => y.self - x.self || x.seq - y.seq) : steps;
    box.appendChild(stepChart(rows, order, open, room));
    return box;
  }

  // room: the pixels the pane has; the time line takes what the columns leave.
  function stepChart(rows, order, open, room) {
    const nested = order === "run";
    const lines = rows.map(irLines);
    const maxLines = Math.max(1, ...lines.map((n) => n || 0));
    const end = Math.max(0.001, ...rows.map((s) => (nested ? s.at + s.ms : s.ms)));
    const indentOf = (s) => (nested ? 2 * (s.depth || 0) : 0);
    const linesW = 64, fixed = 40 + 12 + 3 * COL + 8 + linesW + 8;
    const names = nameRoom(Math.max(...rows.map((s) => labelOf(s).length + indentOf(s))), fixed, room);
    const nameW = 40 + names.width + 4;
    const barW = Math.max(MIN_BAR, Math.min(520, room - fixed - names.width - 4));
    const barX = nameW, numX = barX + barW + 12, linesX = numX + 3 * COL + 8;
    const width = linesX + linesW + 8;
    const chart = svg("svg", { class: "timing-chart", width, height: TOP + rows.length * ROW + 6, role: "img" });
    chart.appendChild(svg("text", { x: 6, y: 16, class: "th" }, "step"));
    const heads = nested ? ["time line · dark: self", "time line"] : ["self (dark), inclusive", "self, inclusive"];
    const barHead = heads.find((h) => h.length * CHAR <= barW) || heads[heads.length - 1];
    chart.appendChild(svg("text", { x: barX, y: 16, class: "th" }, barHead));
    ["ms", "self ms", "IR lines"].forEach((label, i) => chart.appendChild(svg("text", { x: numX + (i + 1) * COL - 4, y: 16, class: "th num" }, label)));
    const scale = barW / end;
    rows.forEach((step, i) => {
      const y = TOP + i * ROW;
      const g = svg("g", { class: `bar-row ${isCodegen(step) ? "codegen" : step.status}`, "data-seq": step.seq, transform: `translate(0,${y})` });
      g.appendChild(svg("rect", { class: "row-bg", x: 0, y: 0, width, height: ROW }));
      g.appendChild(svg("text", { x: 6, y: 13, class: "seq" }, step.seq));
      g.appendChild(svg("text", { x: 40 + indentOf(step) * CHAR, y: 13, class: "name" }, cut(labelOf(step), names.chars - indentOf(step))));
      const x0 = barX + (nested ? step.at * scale : 0);
      g.appendChild(svg("rect", { class: "incl", x: x0, y: 3, width: Math.max(1, step.ms * scale), height: ROW - 6 }));
      g.appendChild(svg("rect", { class: "self", x: x0, y: 3, width: Math.max(step.self > 0 ? 1 : 0, step.self * scale), height: ROW - 6 }));
      const failed = step.status === "failed" || step.status === "incomplete";
      [failed ? "" : ms(step.ms), failed ? "" : ms(step.self), lines[i] === null ? "" : lines[i]].forEach((text, k) =>
        g.appendChild(svg("text", { x: numX + (k + 1) * COL - 4, y: 13, class: "num" }, text)));
      if (lines[i] !== null) g.appendChild(svg("rect", { class: "ir-lines", x: linesX, y: 5, width: Math.max(1, (lines[i] / maxLines) * linesW), height: ROW - 10 }));
      const tip = `${step.seq} ${labelOf(step)}: ${ms(step.ms)} ms, ${ms(step.self)} ms self${lines[i] === null ? "" : `, ${lines[i]} IR lines after`}`;
      g.appendChild(svg("title", {}, tip));
      g.addEventListener("click", () => open(step.seq));
      chart.appendChild(g);
    });
    return chart;
  }

  // The run: every step name over all kernels (from the summaries, nothing inflated), most self time first.
  /** @param {LTKernelSummary[]} kernels */
  function runTotals(kernels) {
    const merged = new Map();
    for (const kernel of kernels) {
      for (const [name, [calls, self, max, seq]] of Object.entries(kernel.timing || {})) {
        const old = merged.get(name) || { name, calls: 0, kernels: 0, self: 0, max: -1, kernel: "", seq: 0 };
        old.calls += calls;
        old.kernels += 1;
        old.self = Math.round((old.self + self) * 1000) / 1000; // as analysis/timing.py rounds: the same ranking
        if (max > old.max) Object.assign(old, { max, kernel: kernel.id, seq });
        merged.set(name, old);
      }
    }
    return [...merged.values()].sort((x, y) => y.self - x.self || (x.name < y.name ? -1 : 1));
  }

  // The run's compile time and how much of it the steps took, as analysis/timing.py's compile_split
  // (a kernel that did not finish: its steps' time); every % of the run chart is of the compile.
  /** @param {LTKernelSummary[]} kernels */
  function compileSplit(kernels) {
    let compile = 0, steps = 0;
    for (const kernel of kernels) {
      const own = Object.values(kernel.timing || {}).reduce((sum, entry) => sum + entry[1], 0);
      compile += Math.max(kernel.ms || 0, own);
      steps += own;
    }
    return { compile, steps, between: Math.max(0, compile - steps), share: (value) => (compile > 0 ? (100 * value) / compile : 0) };
  }

  const SHOWN = 40;
  /**
   * @param {LTKernelSummary[]} kernels
   * @param {(kernel: string, seq: number) => void} open  a bar's click: the slowest run of that step
   * @param {boolean} [all]  every step name (else the SHOWN slowest)
   * @param {number} [room]
   * @returns {HTMLElement}
   */
  function runChart(kernels, open, all = false, room = 900) {
    const box = el("section", "timing");
    const totals = runTotals(kernels);
    const split = compileSplit(kernels);
    const pct = (value) => `${split.share(value).toFixed(1)}%`;
    box.appendChild(el("h2", "", "Timing · the run"));
    const facts = `${plural(kernels.length, "kernel")} · compile ${split.compile.toFixed(1)} ms in all: ${split.steps.toFixed(1)} ms (${pct(split.steps)}) in passes and codegen, ${split.between.toFixed(1)} ms (${pct(split.between)}) ${rules.between}`;
    box.appendChild(el("div", "timing-facts muted", `${facts} · ${plural(totals.length, "step name")}, most self time first, % of the compile; a bar opens the slowest run of that step`));
    const rows = all ? totals : totals.slice(0, SHOWN);
    const whereW = 64, fixed = 6 + 12 + 5 * COL + whereW;
    const names = nameRoom(Math.max(...rows.map((t) => t.name.length)), fixed, room);
    const barW = Math.max(MIN_BAR, Math.min(420, room - fixed - names.width - 12));
    const barX = names.width + 12, numX = barX + barW + 12, width = numX + 5 * COL + whereW;
    const chart = svg("svg", { class: "timing-chart run", width, height: TOP + rows.length * ROW + 6, role: "img" });
    chart.appendChild(svg("text", { x: 6, y: 16, class: "th" }, "step"));
    chart.appendChild(svg("text", { x: barX, y: 16, class: "th" }, "self time"));
    const heads = ["self ms", "%", "calls", "kernels", "slowest"];
    heads.forEach((label, i) => chart.appendChild(svg("text", { x: numX + (i + 1) * COL - 4, y: 16, class: "th num" }, label)));
    chart.appendChild(svg("text", { x: numX + 5 * COL + 4, y: 16, class: "th" }, "in"));
    const top = Math.max(0.001, ...rows.map((t) => t.self));
    rows.forEach((t, i) => {
      const g = svg("g", { class: "bar-row", "data-name": t.name, "data-kernel": t.kernel, "data-seq": t.seq, transform: `translate(0,${TOP + i * ROW})` });
      g.appendChild(svg("rect", { class: "row-bg", x: 0, y: 0, width, height: ROW }));
      g.appendChild(svg("text", { x: 6, y: 13, class: "name" }, cut(t.name, names.chars)));
      g.appendChild(svg("rect", { class: "self", x: barX, y: 3, width: Math.max(1, (t.self / top) * barW), height: ROW - 6 }));
      const cells = [ms(t.self), pct(t.self), t.calls, t.kernels, ms(t.max)];
      cells.forEach((text, k) => g.appendChild(svg("text", { x: numX + (k + 1) * COL - 4, y: 13, class: "num" }, text)));
      g.appendChild(svg("text", { x: numX + 5 * COL + 4, y: 13, class: "where" }, `${t.kernel}/${t.seq}`));
      g.appendChild(svg("title", {}, `${t.name}: ${ms(t.self)} ms self over ${plural(t.calls, "call")} in ${plural(t.kernels, "kernel")}; slowest ${ms(t.max)} ms in ${t.kernel} (step ${t.seq})`));
      g.addEventListener("click", () => open(t.kernel, t.seq));
      chart.appendChild(g);
    });
    box.appendChild(chart);
    if (!all && totals.length > rows.length) {
      const more = el("button", "timing-more", `show all ${totals.length}`);
      more.type = "button";
      more.addEventListener("click", () => box.replaceWith(runChart(kernels, open, true, room)));
      box.appendChild(more);
    }
    return box;
  }

  return { kernelChart, runChart, runTotals, compileSplit };
})();
