// @ts-check
import { LTText } from "./text.js";
// Fragment layouts as pictures: which thread holds each element of a fragment buffer, and at
// which local (register) index. Python keeps TileLang's two expressions per fragment as TVM
// prints them (integrations/ir_reading/tilelang_layouts.py); the page evaluates them over the buffer's
// shape with the small evaluator below and draws the grid as SVG.
export const LTLayout = (() => {
  const { el, svg, plural } = LTText;

  // --- expressions: what TVM prints for index arithmetic -----------------------------------------
  // Python's operators and precedence; // and % round toward minus infinity (TVM's floordiv/floormod).
  const floordiv = (a, b) => Math.floor(a / b);
  const floormod = (a, b) => a - b * Math.floor(a / b);
  const truncdiv = (a, b) => Math.trunc(a / b);
  /** @type {Array<[string[], Object<string, (a: number, b: number) => number>]>} */
  const BINARY = [
    [["or"], { or: (a, b) => (a || b ? 1 : 0) }],
    [["and"], { and: (a, b) => (a && b ? 1 : 0) }],
    [["<", "<=", ">", ">=", "==", "!="], { "<": (a, b) => +(a < b), "<=": (a, b) => +(a <= b), ">": (a, b) => +(a > b), ">=": (a, b) => +(a >= b), "==": (a, b) => +(a === b), "!=": (a, b) => +(a !== b) }],
    [["|"], { "|": (a, b) => a | b }],
    [["^"], { "^": (a, b) => a ^ b }],
    [["&"], { "&": (a, b) => a & b }],
    [["<<", ">>"], { "<<": (a, b) => a << b, ">>": (a, b) => a >> b }],
    [["+", "-"], { "+": (a, b) => a + b, "-": (a, b) => a - b }],
    [["*", "//", "%", "/"], { "*": (a, b) => a * b, "//": floordiv, "%": floormod, "/": truncdiv }],
  ];
  const CALLS = {
    min: Math.min, max: Math.max, floordiv, floormod, truncdiv, truncmod: (a, b) => a - b * truncdiv(a, b), Div: truncdiv, Mod: (a, b) => a - b * truncdiv(a, b),
    FloorDiv: floordiv, FloorMod: floormod, shift_right: (a, b) => a >> b, shift_left: (a, b) => a << b,
    bitwise_and: (a, b) => a & b, bitwise_or: (a, b) => a | b, bitwise_xor: (a, b) => a ^ b, bitwise_not: (a) => ~a,
    Select: (c, a, b) => (c ? a : b), if_then_else: (c, a, b) => (c ? a : b), Cast: (_dtype, x) => x,
  };
  const TOKEN = /\s*(?:(\d+)|("[^"]*")|([A-Za-z_][\w.]*)|(\/\/|<=|>=|==|!=|<<|>>|[-+*%/(),<>^&|~]))/y;

  function tokens(text) {
    const out = [];
    TOKEN.lastIndex = 0;
    while (TOKEN.lastIndex < text.length) {
      const start = TOKEN.lastIndex;
      const m = TOKEN.exec(text);
      if (!m) {
        if (!text.slice(start).trim()) break;
        throw new Error(`cannot read "${text.slice(start, start + 12)}"`);
      }
      if (m[1] !== undefined) out.push({ num: Number(m[1]) });
      else if (m[2] !== undefined) out.push({ str: m[2] });
      else if (m[3] !== undefined) out.push(["and", "or", "not"].includes(m[3]) ? { op: m[3] } : { name: m[3] });
      else out.push({ op: m[4] });
    }
    return out;
  }

  // An expression as a function of an environment {var: integer}; throws on what it cannot read.
  function compile(text) {
    const toks = tokens(text);
    let at = 0;
    const peek = () => toks[at];
    const take = (op) => {
      const t = toks[at];
      if (!t || t.op !== op) throw new Error(`expected "${op}" in ${text}`);
      at++;
    };
    function binary(level) {
      if (level === BINARY.length) return unary();
      let left = binary(level + 1);
      const [ops, fns] = BINARY[level];
      while (peek() && ops.includes(peek().op)) {
        const fn = fns[toks[at++].op], l = left, right = binary(level + 1);
        left = (env) => fn(l(env), right(env));
      }
      return left;
    }
    function unary() {
      const t = peek();
      if (t && t.op === "-") { at++; const inner = unary(); return (env) => -inner(env); }
      if (t && t.op === "~") { at++; const inner = unary(); return (env) => ~inner(env); }
      if (t && t.op === "not") { at++; const inner = unary(); return (env) => +!inner(env); }
      return primary();
    }
    function primary() {
      const t = toks[at++];
      if (!t) throw new Error(`${text} ends too soon`);
      if (t.num !== undefined) return () => t.num;
      if (t.str !== undefined) return () => 0; // a dtype, as in T.Cast("int64", x)
      if (t.op === "(") { const inner = binary(0); take(")"); return inner; }
      if (t.name !== undefined) {
        if (peek() && peek().op === "(") {
          at++;
          const args = [];
          while (!(peek() && peek().op === ")")) {
            args.push(binary(0));
            if (peek() && peek().op === ",") at++;
            else break;
          }
          take(")");
          const short = t.name.replace(/^T\./, "");
          const fn = /^u?int\d+$/.test(short) ? (x) => x : CALLS[short];
          if (!fn) throw new Error(`the page cannot evaluate ${t.name}(…)`);
          return (env) => fn(...args.map((arg) => arg(env)));
        }
        const name = t.name;
        return (env) => {
          if (!(name in env)) throw new Error(`unknown variable ${name}`);
          return env[name];
        };
      }
      throw new Error(`cannot read "${t.op}" in ${text}`);
    }
    const fn = binary(0);
    if (at !== toks.length) throw new Error(`cannot read the end of ${text}`);
    return fn;
  }

  // Every element's threads (one per replica) and local index, in row-major order.
  function evaluate(layout) {
    const shape = layout.shape || [];
    const reps = layout.replicate || 1;
    const dims = (layout.vars || []).filter((v) => v !== "_rep");
    if (dims.length !== shape.length) throw new Error(`${dims.length} variables for a ${shape.length}-dimensional buffer`);
    const thread = compile(layout.thread), index = (layout.index || []).map(compile);
    const count = shape.reduce((n, d) => n * d, 1);
    const threads = new Int32Array(count * reps), locals = [];
    const env = { _rep: 0 };
    for (let e = 0; e < count; e++) {
      let rest = e;
      for (let d = shape.length - 1; d >= 0; d--) { env[dims[d]] = rest % shape[d]; rest = Math.floor(rest / shape[d]); }
      for (let r = 0; r < reps; r++) { env._rep = r; threads[e * reps + r] = (layout.thread_min || 0) + thread(env); }
      env._rep = 0;
      locals.push(index.map((f) => f(env)).join(","));
    }
    return { shape, reps, count, threads, locals };
  }

  // --- the picture ------------------------------------------------------------------------------
  // A hue per warp, lighter to darker over its lanes in groups of four (an MMA's quads show).
  const colorOf = (t) => `hsl(${(Math.floor(t / 32) % 8) * 47 + (t % 4) * 6} 65% ${88 - (Math.floor(t / 4) % 8) * 5}%)`;
  const dimsText = (shape) => shape.join("×");

  // The grid: rows are the leading dimensions, columns the last (a 1-D buffer wraps at 32).
  function grid(layout, values, room, onHover, onPick) {
    const { shape, reps, count, threads, locals } = values;
    const cols = shape.length > 1 ? shape[shape.length - 1] : Math.min(count, 32);
    const rows = Math.ceil(count / cols);
    const cell = Math.max(5, Math.min(34, Math.floor((room - 40) / cols)));
    const labels = cell >= 26;
    const chart = svg("svg", { class: "layout-grid", width: 40 + cols * cell + 2, height: 16 + rows * cell + 2, role: "img" });
    // Axis labels as often as they fit: a column label needs ~24 px, a row label ~11 (a power of two apart).
    const every = (px) => 2 ** Math.max(0, Math.ceil(Math.log2(px / cell)));
    for (let c = 0; c < cols; c += every(24)) chart.appendChild(svg("text", { x: 40 + c * cell + 1, y: 11, class: "axis" }, String(c)));
    for (let r = 0; r < rows; r += every(11)) {
      const label = shape.length > 1 ? String(r) : `${r * cols}`;
      chart.appendChild(svg("text", { x: 36, y: 16 + r * cell + Math.min(cell, 12), class: "axis row" }, label));
    }
    const cells = svg("g", { class: "cells" });
    for (let e = 0; e < count; e++) {
      const r = Math.floor(e / cols), c = e % cols;
      const mine = Array.from(threads.subarray(e * reps, (e + 1) * reps));
      const rect = svg("rect", { x: 40 + c * cell, y: 16 + r * cell, width: cell - 1, height: cell - 1, fill: colorOf(mine[0]), "data-e": e, "data-t": mine.join(","), "data-l": locals[e] });
      cells.appendChild(rect);
      if (labels) {
        const x = 40 + c * cell + cell / 2;
        cells.appendChild(svg("text", { x, y: 16 + r * cell + cell / 2 - 2, class: "cell-t" }, `T${mine[0]}${reps > 1 ? "+" : ""}`));
        cells.appendChild(svg("text", { x, y: 16 + r * cell + cell / 2 + 9, class: "cell-l" }, locals[e]));
      }
    }
    chart.appendChild(cells);
    const at = (/** @type {Event} */ event) => LTText.closest(event, "rect[data-e]");
    chart.addEventListener("mousemove", (event) => { const rect = at(event); if (rect) onHover(Number(rect.dataset.e)); });
    chart.addEventListener("click", (event) => { const rect = at(event); if (rect) onPick(Number(rect.dataset.t.split(",")[0])); });
    return chart;
  }

  function indexText(layout, e) {
    const shape = layout.shape, out = [];
    for (let d = shape.length - 1; d >= 0; d--) { out.unshift(e % shape[d]); e = Math.floor(e / shape[d]); }
    return out.join(", ");
  }

  function threadText(t) {
    return t < 0 ? `thread ${t}` : `thread ${t} (warp ${Math.floor(t / 32)}, lane ${t % 32})`;
  }

  // One fragment: the facts, the expressions, the grid, and a thread to highlight.

  // One fragment: the facts, the expressions, the grid, and a thread to highlight (picked: shared
  // by the fragments of a pass, so switching buffers keeps the thread lit).
  function fragmentView(layout, room, picked) {
    const box = el("div", "layout-one");
    let values;
    try {
      values = evaluate(layout);
    } catch (err) {
      box.appendChild(el("p", "error", `This layout cannot be drawn: ${err.message}.`));
      box.appendChild(el("pre", "layout-expr", `thread = ${layout.thread}\nlocal  = ${(layout.index || []).join(", ")}`));
      return box;
    }
    const first = layout.thread_min || 0, last = first + (layout.threads || 0) - 1;
    const perThread = new Map();
    for (const t of values.threads) perThread.set(t, (perThread.get(t) || 0) + 1);
    const facts = [
      `${layout.buffer}: ${dimsText(layout.shape)} ${layout.dtype || ""}`.trim(),
      layout.threads ? `threads ${first}–${last}` : "",
      `${plural(Math.max(...perThread.values()), "element")} per thread`,
      values.reps > 1 ? `each element held by ${values.reps} threads` : "",
    ];
    box.appendChild(el("div", "layout-facts", facts.filter(Boolean).join(" · ")));
    box.appendChild(el("pre", "layout-expr", `thread = ${first ? `${first} + ` : ""}${layout.thread}\nlocal  = ${(layout.index || []).join(", ")}`));
    const tools = el("div", "layout-tools");
    tools.appendChild(el("label", "", "highlight thread "));
    const pick = el("input", "layout-thread");
    pick.type = "number";
    pick.min = String(first);
    pick.max = String(last);
    pick.placeholder = String(first);
    tools.lastChild.appendChild(pick);
    const HINT = "point at an element; click it to highlight its thread";
    const status = el("span", "layout-status muted", HINT);
    tools.appendChild(status);
    box.appendChild(tools);
    let chart = null;
    const highlight = (t) => {
      if (t !== null && Number.isNaN(t)) t = null;
      chart.classList.toggle("picked", t !== null);
      for (const rect of chart.querySelectorAll("rect[data-e]")) rect.classList.toggle("mine", t !== null && rect.dataset.t.split(",").includes(String(t)));
      picked.thread = t;
      if (t === null) {
        status.textContent = HINT;
        return;
      }
      const held = chart.querySelectorAll("rect.mine").length;
      const outside = layout.threads && (t < first || t > last) ? ` (not one of this layout's threads ${first}–${last})` : "";
      status.textContent = `${threadText(t)} holds ${plural(held, "element")}${outside}`;
    };
    const hover = (e) => {
      const ts = Array.from(values.threads.subarray(e * values.reps, (e + 1) * values.reps));
      const who = ts.length > 1 ? `threads ${ts.join(", ")}` : threadText(ts[0]);
      status.textContent = `${layout.buffer}[${indexText(layout, e)}] → ${who} · local ${values.locals[e]}`;
    };
    const scroller = el("div", "layout-scroll");
    const cols = layout.shape.length > 1 ? layout.shape[layout.shape.length - 1] : Math.min(values.count, 32);
    let zoomed = false;
    const draw = () => {
      // Zoomed in, every cell is big enough to carry its thread and local index (the pane scrolls).
      chart = grid(layout, values, zoomed ? 40 + cols * 30 : room, hover, (t) => { pick.value = String(t); highlight(t); });
      scroller.replaceChildren(chart);
      highlight(pick.value === "" ? null : Number(pick.value));
    };
    const zoom = el("button", "layout-zoom", "zoom in: label every cell");
    zoom.type = "button";
    zoom.addEventListener("click", () => {
      zoomed = !zoomed;
      zoom.textContent = zoomed ? "fit to the pane" : "zoom in: label every cell";
      draw();
    });
    tools.insertBefore(zoom, status);
    pick.addEventListener("input", () => highlight(pick.value === "" ? null : Number(pick.value)));
    if (picked.thread !== null && picked.thread !== undefined) pick.value = String(picked.thread);
    draw();
    box.appendChild(scroller);
    return box;
  }

  // The layouts a pass set: a button per fragment, the first one drawn.
  function section(step, room = 900) {
    const layouts = step.layouts || [];
    const box = el("section", "layouts");
    box.appendChild(el("h3", "", `Fragment layouts after ${step.name} (${layouts.length})`));
    box.id = "layouts";
    const bar = el("div", "layout-buffers");
    const shown = el("div", "layout-shown");
    const picked = { thread: null };
    const show = (i) => {
      for (const button of /** @type {HTMLCollectionOf<HTMLElement>} */ (bar.children)) button.classList.toggle("on", Number(button.dataset.i) === i);
      shown.replaceChildren(fragmentView(layouts[i], room, picked));
    };
    layouts.forEach((layout, i) => {
      const button = el("button", "", `${layout.buffer} ${dimsText(layout.shape)}`);
      button.type = "button";
      button.dataset.i = String(i);
      button.dataset.buffer = layout.buffer;
      button.addEventListener("click", () => show(i));
      bar.appendChild(button);
    });
    box.appendChild(bar);
    box.appendChild(shown);
    if (layouts.length) show(0);
    return box;
  }

  return { compile, evaluate, section };
})();
