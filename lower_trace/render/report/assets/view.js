// @ts-check
import { LTText } from "./text.js";
import { LTBlame } from "./blame.js";
import { LTDiff } from "./diff.js";
import { LTLayout } from "./layout.js";
import { LTOrigins } from "./origins.js";
/** @import { LTDevice, LTError, LTKernel, LTLaunches, LTLaunchValue, LTRow, LTRules } from "./payload.js" */
/** @import { PageState } from "./state.js" */
/** @typedef {ReturnType<typeof LTView.create>} LTDetailView what LTView.create gives a page */
/** @typedef {{state: PageState, rules: LTRules, handlers: {select?: (seq: number) => void}}} LTViewContext one view's page state, rules and handlers */
/** @typedef {{snap: (digest: string) => string}} LTTexts a kernel, or anything with texts by digest (a comparison's sides) */
// The detail pane: a pass's diff (side by side or unified, folded context, word marks), the IR
// of a no-op or failed pass, codegen's TIR next to its source, errors. Built when shown.
export const LTView = (() => {
  const { el, appendText, appendMarked, matchRanges } = LTText;
  const CONTEXT = 3;
  const rowsCache = new Map();
  const isCodegen = (step) => step.kind === "codegen";
  // A failed pass has no meaningful time: it ends when TVM has finished building the error. A pass a
  // killed run left open has the time it had run at least (the trace's loader computes it); brief: the list's narrow column.
  const msText = (step, brief = false) =>
    step.status === "incomplete" && step.ms > 0 ? (brief ? `≥${step.ms.toFixed(2)} ms` : `${step.ms.toFixed(2)} ms so far`)
      : step.status === "failed" || step.status === "incomplete" ? "" : `${(step.ms || 0).toFixed(2)} ms`;
  const statusOf = (step) => (isCodegen(step) ? "codegen" : step.status);
  const titleOf = (step) => (isCodegen(step) ? `${step.role} codegen · ${step.function}` : step.name);

  // A pass built with arguments, as the trace recorded it (model.PassCall.expression).
  const callText = (call) => `${call.factory}(${[...(call.args || []), ...(call.kwargs || []).map(([k, v]) => `${k}=${v}`)].join(", ")})`;

  // --- detail view ------------------------------------------------------------------------------
  // A compiler's message (gcc / nvcc output) keeps its lines: the message is a pre of its own.
  /** @param {LTError} error */
  function errorBox(error) {
    const box = el("section", "error");
    box.appendChild(el("strong", "error-type", error.type));
    box.appendChild(el("pre", "message", error.message));
    if (error.traceback) {
      const details = el("details", "traceback-box");
      details.open = true;
      details.appendChild(el("summary", "", "traceback"));
      details.appendChild(el("pre", "traceback", error.traceback));
      box.appendChild(details);
    }
    return box;
  }

  function copyButton(label, text) {
    const button = el("button", "copy", label);
    button.type = "button";
    button.addEventListener("click", async () => {
      const value = typeof text === "function" ? text() : text;
      let ok;
      try {
        await navigator.clipboard.writeText(value);
        ok = true;
      } catch {
        const area = el("textarea");
        area.value = value;
        document.body.appendChild(area);
        area.select();
        try { ok = document.execCommand("copy"); } catch { ok = false; }
        area.remove();
      }
      button.textContent = ok ? "copied" : "copy failed";
      setTimeout(() => { button.textContent = label; }, 1200);
    });
    return button;
  }

  const marked = (ctx, node, text) => (ctx.state.regex ? appendMarked(node, text, matchRanges(ctx.state.regex, text)) : appendText(node, text));

  // An IR in full. With `blame` ({kernel, seq}: the IR after pass seq) it has a blame toggle:
  // each line with the pass that last changed it, a click away from that pass's diff.
  // With `origin` ({kernel, digest}: which text it is) each line carries the line of the user's program it comes from.
  /** @param {LTViewContext} ctx @param {string} text @param {string} label @param {{kernel: LTKernel, seq: number}|null} [blame] @param {{kernel: LTKernel, digest: string}|null} [origin] */
  function irView(ctx, text, label, blame, origin) {
    const box = el("section", "ir-box");
    const bar = el("div", "toolbar");
    bar.appendChild(el("span", "label", label));
    bar.appendChild(copyButton("copy", text));
    box.appendChild(bar);
    const lined = origin && LTOrigins.linesOf(origin.kernel, origin.digest);
    const plain = () => (lined ? LTOrigins.pre(text, origin.kernel, origin.digest, (node, line) => marked(ctx, node, line)) : marked(ctx, el("pre", "ir"), text));
    let body = plain();
    box.appendChild(body);
    if (blame && ctx.handlers.select) {
      const toggle = el("button", "blame-toggle", "blame");
      toggle.type = "button";
      toggle.title = "show which pass last changed each line";
      const show = () => {
        const next = ctx.state.blame ? blameTable(ctx, blame.kernel, blame.seq, text) : plain();
        body.replaceWith(next);
        body = next;
        toggle.classList.toggle("on", ctx.state.blame);
        toggle.textContent = ctx.state.blame ? "blame: on" : "blame";
      };
      toggle.addEventListener("click", () => {
        ctx.state.blame = !ctx.state.blame;
        show();
      });
      bar.appendChild(toggle);
      if (ctx.state.blame) show();
    }
    return box;
  }

  const blameCache = new Map();
  function blameTable(ctx, kernel, seq, text) {
    const key = `${kernel.id}/${seq}`;
    let lines = blameCache.get(key);
    if (!lines) {
      lines = LTBlame.at(kernel, seq);
      if (blameCache.size >= 50) blameCache.delete(blameCache.keys().next().value);
      blameCache.set(key, lines);
    }
    if (lines.map((l) => l.text).join("\n") !== LTDiff.splitLines(text).join("\n")) {
      return el("p", "hint", "This IR is not on the pass history's path, so its lines cannot be blamed.");
    }
    const table = el("table", "blame");
    const body = el("tbody");
    let previous;
    for (const line of lines) {
      const tr = el("tr");
      const seqText = line.by ? String(line.by.seq) : "input";
      tr.dataset.seq = seqText;
      const who = el("td", "by");
      if (line.by !== previous) { // one label per run of lines from the same pass, as git blame tools do
        if (line.by) {
          const link = el("button", "blame-by", `#${line.by.seq} ${line.by.name}`);
          link.type = "button";
          link.title = LTText.visible(`${line.by.name}: show this pass's diff`);
          link.addEventListener("click", () => ctx.handlers.select(line.by.seq));
          who.appendChild(link);
        } else {
          who.appendChild(el("span", "muted", "(input)"));
        }
      }
      previous = line.by;
      tr.appendChild(who);
      tr.appendChild(marked(ctx, el("td", "code"), line.text));
      body.appendChild(tr);
    }
    table.appendChild(body);
    return table;
  }

  /** @param {LTViewContext} ctx @param {HTMLElement} main @param {LTKernel|null} kernel @param {LTRow|null|undefined} step */
  function renderDetail(ctx, main, kernel, step) {
    main.replaceChildren();
    main.style.scrollPaddingTop = "";  // set again below the sticky source pane, when there is one
    const snap = kernel ? kernel.snap : () => "";
    if (!kernel) {
      main.appendChild(el("p", "hint", "No kernel was traced in this run."));
      return;
    }
    if (!step) {
      main.appendChild(el("p", "hint", "This kernel has no recorded step."));
      return;
    }
    const head = el("div", "detail-head");
    if (step.kind === "error") {
      head.appendChild(el("h2", "", `${kernel.name}: the compile failed`));
      head.appendChild(el("div", "meta", "outside any traced pass (a compiler or backend error); the passes and codegen before it are listed below"));
      main.appendChild(head);
      main.appendChild(errorBox(step.error));
      return;
    }
    head.appendChild(el("h2", "", `#${step.seq} ${titleOf(step)}`));
    const meta = [kernel.name, statusOf(step)];
    if (!isCodegen(step)) meta.push(step.phase, step.caller ? `run by ${step.caller}` : "", step.depth ? `nested (depth ${step.depth}, in #${step.parent})` : "");
    if (step.call) meta.push(`built as ${callText(step.call)}`);
    else meta.push(step.language, step.target !== step.language ? step.target : "");
    meta.push(msText(step));
    head.appendChild(el("div", "meta", meta.filter(Boolean).join(" · ")));
    main.appendChild(head);
    const failing = step.status === "failed" && step.error ? { digest: step.before, message: `${step.error.message}\n${step.error.traceback || ""}` } : null;
    if (step.error) main.appendChild(errorBox(step.error));
    const rerun = reproBox(step);
    if (rerun) main.appendChild(rerun);
    // The user's source sits between what went wrong and the IR it points into.
    const pane = LTOrigins.sourcePane(kernel, (seq) => ctx.handlers.select && ctx.handlers.select(seq), failing);
    if (pane) {
      main.appendChild(pane);
      // What is scrolled into view ("see the picture below", a pinned line) lands below the pane, not under it.
      requestAnimationFrame(() => { main.style.scrollPaddingTop = `${pane.offsetHeight + 12}px`; });
    }
    if (isCodegen(step)) {
      if (step.edit_status) main.appendChild(editNote(ctx, step));
      const panes = el("div", "panes");
      const maker = LTBlame.passMaking(kernel, step.tir);
      panes.appendChild(irView(ctx, snap(step.tir), "final TIR handed to codegen", maker ? { kernel, seq: maker.seq } : null, { kernel, digest: step.tir }));
      const compiled = step.generated ? `your edited ${step.language} source, compiled (${step.role})` : `generated ${step.language} source (${step.role})`;
      panes.appendChild(irView(ctx, snap(step.source), compiled, null, { kernel, digest: step.source }));
      main.appendChild(panes);
      if (step.generated && step.edit_status === "PATCHED") {
        main.appendChild(el("h3", "", "your edit against the generated source"));
        main.appendChild(diffView(ctx, kernel, { before: step.generated, after: step.source }, { noFullIR: true, names: ["generated", step.edit_path] }));
      }
      const device = kernel.deviceStage;
      if (device && device.seq === step.seq) main.appendChild(deviceSection(ctx, kernel, device));
      if (kernel.launches && kernel.launches.rows.length) main.appendChild(launchesSection(kernel.launches));
    } else if (step.status === "changed") {
      const layouts = step.layouts && step.layouts.length ? LTLayout.section(step, Math.max(480, main.clientWidth - 40)) : null;
      if (layouts) {
        const jump = el("button", "layout-jump", `▦ ${step.layouts.length} fragment layout${step.layouts.length === 1 ? "" : "s"} set by this pass: see the picture below`);
        jump.type = "button";
        jump.addEventListener("click", () => layouts.scrollIntoView({ block: "start" }));
        main.appendChild(jump);
      }
      main.appendChild(diffView(ctx, kernel, step, { names: [`before ${step.name}`, `after ${step.name}`], blame: true }));
      if (layouts) main.appendChild(layouts);
    } else if (step.status === "skipped") {
      main.appendChild(el("p", "hint", "lower-trace bisect skipped this pass in this run (it was testing the pipeline without it)."));
      main.appendChild(irView(ctx, snap(step.before), "the IR it would have received"));
    } else if (step.status === "unchanged") {
      main.appendChild(el("p", "hint", "This pass left the IR unchanged."));
      main.appendChild(irView(ctx, snap(step.before), "IR (before and after)", { kernel, seq: step.seq }, { kernel, digest: step.before }));
    } else {
      main.appendChild(irView(ctx, snap(step.before), "the IR this pass received", null, { kernel, digest: step.before }));
    }
  }

  // What the kernel was called with while traced (lower-trace show --launches), and the command that writes
  // a launch as a standalone repro (lower-trace repro --launch).
  /** @param {LTLaunches} launches */
  function launchesSection(launches) {
    const box = el("section", "launches");
    box.appendChild(el("h3", "", `launches · ${launches.rows.length} recorded${launches.rows.length === 8 ? " (the first 8)" : ""}`));
    if (launches.repro) {
      const line = el("div", "repro-note");
      line.appendChild(el("span", "", "Write a launch as a script anyone can run (rebuilds the kernel, runs it on these inputs, compares): "));
      line.appendChild(el("code", "", launches.repro));
      line.appendChild(copyButton("copy command", launches.repro));
      box.appendChild(line);
    } else {
      box.appendChild(el("p", "hint", "No tensors were kept: trace with TL_LOWER_TRACE_LAUNCHES=data to write a launch as a repro (lower-trace repro --launch)."));
    }
    const table = el("table", "launch-table");
    const head = el("tr");
    for (const name of ["#", "ms", "arguments", "returned", "call site"]) head.appendChild(el("th", "", name));
    table.appendChild(head);
    const value = (/** @type {LTLaunchValue} */ v) => {
      const cell = el("div", v.written ? "launch-value written" : "launch-value", `${v.name} ${v.text}${v.written ? " (written)" : ""}${v.kept ? " · kept" : ""}`);
      if (v.note) cell.title = v.note;
      return cell;
    };
    for (const row of launches.rows) {
      const tr = el("tr", row.error ? "launch-error" : "");
      tr.appendChild(el("td", "", String(row.n)));
      tr.appendChild(el("td", "", row.ms.toFixed(3)));
      const args = el("td");
      row.args.forEach((v) => args.appendChild(value(v)));
      if (row.error) args.appendChild(el("div", "error-type", `raised ${row.error}`));
      tr.appendChild(args);
      const returned = el("td");
      row.returned.forEach((v) => returned.appendChild(value(v)));
      tr.appendChild(returned);
      tr.appendChild(el("td", "mono", row.site));
      table.appendChild(tr);
    }
    box.appendChild(table);
    return box;
  }

  // nvcc's work on this source: ptxas' resources, then PTX and SASS, each line lit with the
  // user's line its CUDA line comes from (the source map) and titled with that CUDA line.
  /** @param {LTViewContext} ctx @param {LTKernel} kernel @param {LTDevice} device */
  function deviceSection(ctx, kernel, device) {
    const box = el("section", "device-stage");
    box.appendChild(el("h3", "", `device stage · ${device.arch} · ${device.how}${device.edited ? " (your edited working copy)" : ""}`));
    box.appendChild(el("div", "device-line", device.line));
    if (device.counts.length) box.appendChild(el("div", "meta", device.counts.map(([kind, count]) => `${kind} ${count}`).join(" · ")));
    else if (!device.sass) box.appendChild(el("p", "hint", "SASS: run `lower-trace device` on this trace to disassemble it"));
    if (device.error) box.appendChild(el("p", "hint", device.error));
    box.appendChild(el("div", "meta mono", device.command));
    const panes = el("div", "panes");
    if (device.ptx) {
      const view = irView(ctx, kernel.snap(device.ptx), "PTX (nvcc)", null, { kernel, digest: device.ptx });
      view.classList.add("device-ptx");
      const pre = view.querySelector("pre.ir");
      if (pre && !pre.querySelector("span.ln")) pre.replaceWith(linedPre(kernel.snap(device.ptx)));  // no source map: lines all the same
      const cuda = device.cuda.ptx || [];
      view.querySelectorAll("pre.ir > span.ln").forEach((span, i) => {
        if (cuda[i]) titleCuda(/** @type {HTMLElement} */ (span), cuda[i], 0);
      });
      panes.appendChild(view);
    }
    if (device.sass) panes.appendChild(sassView(ctx, kernel, device));
    box.appendChild(panes);
    return box;
  }

  /** Give a listing's line its CUDA line (and nvcc's, where the instruction was moved off it) as data-cu and title. */
  function titleCuda(/** @type {HTMLElement} */ node, /** @type {number} */ line, /** @type {number} */ nvcc) {
    node.dataset.cu = String(line);
    const moved = nvcc ? `\nnvcc's line table says line ${nvcc}, which cannot have made this instruction` : "";
    node.title = `CUDA line ${line}${moved}` + (node.title ? `\n${node.title}` : "");
  }

  // nvdisasm pads the address to the opcode for a predicate ("@!UP0 ") most lines lack: 12 spaces
  // fewer keep the opcodes in one column in a narrower pane.
  const narrow = (/** @type {string} */ text) => text.replace(/^(\/\*[0-9a-f]+\*\/)( +)/, (_, address, pad) => address + pad.slice(Math.min(12, pad.length - 1)));

  // The SASS pane: nvdisasm's instructions and labels (its //## File records are not rows), each
  // instruction with its CUDA file:line as a column; one moved off nvcc's line (analysis/device/
  // attribution.py) shows nvcc's beside it. A row's origin is its listing line's in the source map.
  /** @param {LTViewContext} ctx @param {LTKernel} kernel @param {LTDevice} device */
  function sassView(ctx, kernel, device) {
    const text = kernel.snap(device.sass);
    const lines = LTDiff.splitLines(text);
    const box = el("section", "ir-box device-sass");
    const bar = el("div", "toolbar");
    bar.appendChild(el("span", "label", "SASS (nvdisasm -c -gi): instructions, each with the CUDA line it comes from"));
    const copy = bar.appendChild(copyButton("copy", text));
    copy.title = "nvdisasm's whole listing, line records included";
    box.appendChild(bar);
    const column = (/** @type {number} */ line) => (line ? `${device.source_name}:${line}` : "");
    const secondary = (/** @type {number} */ nvcc) => (nvcc ? ` (nvcc: ${nvcc})` : "");
    const width = Math.max(0, ...device.sass_rows.map(([, line, nvcc]) => column(line).length + secondary(nvcc).length));
    const pre = el("pre", "ir lined");
    device.sass_rows.forEach(([index, line, nvcc], n) => {
      if (n) pre.appendChild(document.createTextNode("\n"));
      const row = el("span", "ln");
      const where = row.appendChild(el("span", "sass-cu", column(line)));
      if (nvcc) where.appendChild(el("span", "sass-nvcc", secondary(nvcc)));
      where.appendChild(document.createTextNode(" ".repeat(width - column(line).length - secondary(nvcc).length)));
      row.appendChild(document.createTextNode("  "));
      const instruction = row.appendChild(el("span", "sass-text"));
      marked(ctx, instruction, narrow(lines[index] === undefined ? "" : lines[index].trim()));
      if (!line) row.classList.add("sass-label");
      LTOrigins.mark(row, kernel, device.sass, index + 1);
      if (line) titleCuda(row, line, nvcc);
      pre.appendChild(row);
    });
    box.appendChild(pre);
    return box;
  }

  /** @param {string} text */
  function linedPre(text) {
    const box = el("pre", "ir lined");
    LTDiff.splitLines(text).forEach((line, i) => {
      if (i) box.appendChild(document.createTextNode("\n"));
      box.appendChild(el("span", "ln", line));
    });
    return box;
  }

  // How to make a failure happen again without the user's program (lower_trace/repro.py).
  function reproBox(step) {
    let command = "", what = "";
    if (step.repro) {
      command = `python ${step.repro}/repro.py`;
      what = "Reproduce it without your program (the IR this pass received, the pass alone, the same target and configs):";
    } else if (step.input && step.error && step.error.type === "Crashed" && step.error.message.startsWith("the process ended")) {
      const here = location.protocol === "file:" ? decodeURIComponent(location.pathname).replace(/\/[^/]*$/, "") : "RUN";
      command = `lower-trace repro ${here} -k ${step.kernel} -p ${step.seq} -o FOLDER`;
      what = "The process died in this pass; its input was kept. Write a reproducer with:";
    }
    if (!command) return null;
    const box = el("section", "repro-note");
    box.appendChild(el("span", "", what + " "));
    box.appendChild(el("code", "", command));
    box.appendChild(copyButton("copy command", command));
    // The same input shrunk to the smallest module that still fails the same way (lower-trace reduce).
    const run = location.protocol === "file:" ? decodeURIComponent(location.pathname).replace(/\/[^/]*$/, "") : "RUN";
    const reduce = `lower-trace reduce ${run} -k ${step.kernel} -p ${step.seq} -o FOLDER`;
    const line = el("div", "reduce-note");
    line.appendChild(el("span", "", "Shrink it to a bug-report-sized module that fails the same way: "));
    line.appendChild(el("code", "", reduce));
    line.appendChild(copyButton("copy command", reduce));
    box.appendChild(line);
    return box;
  }

  function editNote(ctx, step) {
    const box = el("section", `edit-note ${step.edit_status.toLowerCase()}`);
    const what = (ctx.rules.edit[step.edit_status] || {}).text || "";
    box.appendChild(el("strong", "", step.edit_status));
    box.appendChild(el("span", "", ` ${what}: `));
    box.appendChild(el("code", "", step.edit_path));
    box.appendChild(copyButton("copy path", step.edit_path));
    if (step.edit_backup) {
      box.appendChild(el("span", "", " · your edit: "));
      box.appendChild(el("code", "", step.edit_backup));
    }
    return box;
  }

  // Line diffs by (before, after) digest: digests are unique in a run, so shared across kernels.
  /** @param {LTTexts} kernel @param {{before?: string, after?: string}} step */
  function rowsOf(kernel, step) {
    const key = `${step.before}:${step.after}`;
    let rows = rowsCache.get(key);
    if (!rows) {
      rows = LTDiff.lineRows(kernel.snap(step.before), kernel.snap(step.after));
      if (rowsCache.size >= 500) rowsCache.delete(rowsCache.keys().next().value);
      rowsCache.set(key, rows);
    }
    return rows;
  }

  /**
   * @param {LTViewContext} ctx
   * @param {LTTexts & {id?: string}} kernel
   * @param {{before?: string, after?: string, seq?: number}} step
   * @param {{names?: string[], noFullIR?: boolean, blame?: boolean}} [options]
   */
  function diffView(ctx, kernel, step, options = {}) {
    const snap = kernel.snap;
    const rows = rowsOf(kernel, step);
    const box = el("section", "diff-box");
    const bar = el("div", "toolbar");
    const stats = LTDiff.stats(rows);
    bar.appendChild(el("span", "label", `+${stats.added} −${stats.removed} lines`));
    bar.appendChild(copyButton("copy diff", () => LTDiff.unifiedText(rows, options.names || ["before", "after"])));
    bar.appendChild(copyButton("copy before", snap(step.before)));
    bar.appendChild(copyButton("copy after", snap(step.after)));
    const full = el("button", "", "show full IR");
    full.type = "button";
    if (!options.noFullIR) bar.appendChild(full);
    box.appendChild(bar);
    const table = diffTable(ctx, rows);
    box.appendChild(table);
    if ("origins" in kernel) LTOrigins.markDiff(table, kernel, step.before, step.after);
    full.addEventListener("click", () => {
      const shown = box.querySelector(".panes");
      if (shown) {
        shown.remove();
        full.textContent = "show full IR";
        return;
      }
      const panes = el("div", "panes");
      const own = "origins" in kernel ? /** @type {LTKernel} */ (kernel) : null;
      panes.appendChild(irView(ctx, snap(step.before), "IR before", null, own && { kernel: own, digest: step.before }));
      // Blame is asked for the report's own kernels only, never a comparison's sides.
      panes.appendChild(irView(ctx, snap(step.after), "IR after", options.blame ? { kernel: /** @type {LTKernel} */ (kernel), seq: step.seq } : null, own && { kernel: own, digest: step.after }));
      box.insertBefore(panes, table); // right under the toolbar, in view
      full.textContent = "hide full IR";
    });
    return box;
  }

  // Side by side: a table per side, each scrolling sideways on its own, so IR lines keep one line
  // each (wrapped, most would take two in half a pane). Rows are one line high on both sides, so
  // row i of the old side stays level with row i of the new. Unified: one table, lines wrapped.
  function diffTable(ctx, rows) {
    const table = (cls, cols) => {
      const node = el("table", `diff ${cls}`);
      const group = node.appendChild(el("colgroup"));
      for (const col of cols) group.appendChild(el("col", col));
      node.appendChild(el("tbody"));
      return node;
    };
    if (ctx.state.mode !== "split") {
      const one = table("unified", ["no", "no", "code"]);
      fillDiff(ctx, [one.tBodies[0]], rows);
      return one;
    }
    const box = el("div", "diff-split");
    const sides = ["old", "new"].map((side) => {
      const half = table(`split ${side}`, ["no", "code"]);
      box.appendChild(el("div", `diff-side ${side}`)).appendChild(half);
      return half.tBodies[0];
    });
    fillDiff(ctx, sides, rows);
    return box;
  }

  // Changed rows with CONTEXT lines around them; longer unchanged runs fold into one row (per side).
  function fillDiff(ctx, bodies, rows) {
    const near = new Uint8Array(rows.length);
    rows.forEach((row, i) => {
      if (row.tag !== "=") for (let j = Math.max(0, i - CONTEXT); j <= Math.min(rows.length - 1, i + CONTEXT); j++) near[j] = 1;
    });
    let i = 0;
    while (i < rows.length) {
      if (near[i]) { addRow(ctx, bodies, rows[i]); i++; continue; }
      let end = i;
      while (end < rows.length && !near[end]) end++;
      const hidden = rows.slice(i, end);
      const folds = bodies.map((body) => {
        const fold = el("tr", "fold");
        const cell = el("td", "", `⋯ ${hidden.length} unchanged line${hidden.length === 1 ? "" : "s"} (click to show)`);
        cell.colSpan = bodies.length > 1 ? 2 : 3;
        fold.appendChild(cell);
        return body.appendChild(fold);
      });
      const open = () => {
        const frags = folds.map(() => document.createDocumentFragment());
        for (const row of hidden) addRow(ctx, frags, row);
        folds.forEach((fold, k) => fold.replaceWith(frags[k]));
      };
      for (const fold of folds) fold.addEventListener("click", open);
      i = end;
    }
  }

  function codeCell(ctx, text, ranges, cls) {
    const td = el("td", `code ${cls}`);
    if (text === undefined) return td;
    const marks = ranges ? ranges.map(([a, b]) => [a, b, "word"]) : [];
    appendMarked(td, text, ctx.state.regex ? marks.concat(matchRanges(ctx.state.regex, text)) : marks);
    return td;
  }

  // bodies: the old and new sides (side by side), or the one unified table's.
  function addRow(ctx, bodies, row) {
    const words = row.tag === "~" ? LTDiff.wordRanges(row.old, row.new) : null;
    if (bodies.length > 1) {
      const cls = `r${row.tag === "=" ? "eq" : "ch"}`;
      [[row.oldNo, row.old, "del"], [row.newNo, row.new, "add"]].forEach(([no, text, changed], k) => {
        const tr = el("tr", cls);
        tr.appendChild(el("td", "no", no || ""));
        tr.appendChild(codeCell(ctx, text, words && words[k], row.tag === "=" ? "" : text === undefined ? "empty" : changed));
        bodies[k].appendChild(tr);
      });
      return;
    }
    const body = bodies[0];
    const line = (tag, text, ranges, oldNo, newNo) => {
      const tr = el("tr", tag === " " ? "req" : "rch");
      tr.appendChild(el("td", "no", oldNo || ""));
      tr.appendChild(el("td", "no", newNo || ""));
      const td = codeCell(ctx, text, ranges, tag === "-" ? "del" : tag === "+" ? "add" : "");
      td.insertBefore(document.createTextNode(tag), td.firstChild);
      tr.appendChild(td);
      body.appendChild(tr);
    };
    if (row.tag === "=") line(" ", row.old, null, row.oldNo, row.newNo);
    if (row.tag === "-" || row.tag === "~") line("-", row.old, words && words[0], row.oldNo, null);
    if (row.tag === "+" || row.tag === "~") line("+", row.new, words && words[1], null, row.newNo);
  }

  // pageHandlers.select(seq): open a pass of the shown kernel (blame's links); none, no blame.
  /**
   * @param {PageState} pageState  mode, regex and blame read; blame written by its toggle
   * @param {LTRules} pageRules
   * @param {{select?: (seq: number) => void}} [pageHandlers]
   */
  // Each page's view is its own: the functions below that read the state, rules or handlers get
  // this instance's as their first argument (ctx), so two views never share them.
  function create(pageState, pageRules, pageHandlers = {}) {
    /** @type {LTViewContext} */
    const ctx = { state: pageState, rules: pageRules, handlers: pageHandlers };
    return {
      /** @param {HTMLElement} main @param {LTKernel|null} kernel @param {LTRow|null|undefined} step */
      renderDetail: (main, kernel, step) => renderDetail(ctx, main, kernel, step),
      rowsOf,
      /** @param {LTTexts & {id?: string}} kernel @param {{before?: string, after?: string, seq?: number}} step @param {{names?: string[], noFullIR?: boolean, blame?: boolean}} [options] */
      diffView: (kernel, step, options) => diffView(ctx, kernel, step, options),
      /** @param {string} text @param {string} label @param {{kernel: LTKernel, seq: number}|null} [blame] @param {{kernel: LTKernel, digest: string}|null} [origin] */
      irView: (text, label, blame, origin) => irView(ctx, text, label, blame, origin),
      errorBox,
    };
  }

  return { create, msText, statusOf, isCodegen };
})();
