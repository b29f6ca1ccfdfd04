"use strict";
// The report page: built from the JSON data block; pass content is materialised on demand.
(async function main() {
  const { el, appendText, appendMarked, matchRanges, countMatches } = LTText;
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($("trace-data").textContent);
  const kernels = data.kernels;
  const kernelById = new Map(kernels.map((k) => [k.id, k]));
  const state = {
    kernel: null, seq: null, phase: "", regex: null, hits: null,
    hideUnchanged: localStorage.getItem("lt-hide-unchanged") === "1",
    mode: localStorage.getItem("lt-mode") === "unified" ? "unified" : "split",
  };
  const rowsCache = new Map();
  const CONTEXT = 3;

  // Snapshots arrive as base64 gzip JSON; inflated once with the browser's own gzip.
  async function inflate(b64) {
    const bytes = Uint8Array.from(atob(b64.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  const snapshots = await inflate($("trace-snapshots").textContent);
  const snap = (digest) => (digest && snapshots[digest]) || "";

  const isCodegen = (step) => step.kind === "codegen";
  // A failed pass has no meaningful time: it ends when TVM has finished building the error.
  const msText = (step) => (step.status === "failed" || step.status === "incomplete" ? "" : `${(step.ms || 0).toFixed(2)} ms`);
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + "s"}`;
  const statusOf = (step) => (isCodegen(step) ? "codegen" : step.status);
  const titleOf = (step) => (isCodegen(step) ? `${step.role} codegen · ${step.function}` : step.name);
  // The text a step is searched in: what the pass produced (or received, if it failed); a codegen's source.
  const searchedText = (step) => {
    const ir = snap(isCodegen(step) ? step.source : step.after || step.before);
    return step.error ? `${ir}\n${step.error.type}: ${step.error.message}\n${step.error.traceback || ""}` : ir;
  };

  // --- header -------------------------------------------------------------------
  function renderHeader() {
    const run = data.run;
    $("title").textContent = "";
    appendText($("title"), `lower-trace · ${run.script}`);
    const versions = Object.entries(run.versions || {}).map(([k, v]) => `${k} ${v}`).join(" · ");
    const when = run.started ? new Date(run.started * 1000).toLocaleString() : "";
    $("runinfo").textContent = "";
    appendText($("runinfo"), [`${kernels.length} kernel${kernels.length === 1 ? "" : "s"}`, run.run_id, when, versions].filter(Boolean).join(" · "));
    for (const note of run.notes || []) $("runinfo").appendChild(el("div", "note", note));
    $("hide-unchanged").checked = state.hideUnchanged;
    $("mode").textContent = modeLabel();
  }

  const modeLabel = () => (state.mode === "split" ? "diff: side by side" : "diff: unified");

  // --- kernel index -----------------------------------------------------------------
  function renderKernels() {
    const list = $("kernels");
    list.replaceChildren();
    for (const kernel of kernels) {
      const row = el("button", `kernel-row ${kernel.status}${kernel.id === state.kernel ? " active" : ""}`);
      row.type = "button";
      row.dataset.kernel = kernel.id;
      row.appendChild(el("span", `dot ${kernel.failed || kernel.status === "failed" ? "failed" : kernel.status === "running" ? "incomplete" : "changed"}`));
      row.appendChild(el("span", "kname", kernel.name));
      row.appendChild(el("span", "muted target", kernel.target || "?"));
      const counts = el("span", "counts");
      counts.appendChild(el("span", "", plural(kernel.passes, "pass", "passes")));
      counts.appendChild(el("span", "changed-count", `${kernel.changed} changed`));
      if (kernel.failed) counts.appendChild(el("span", "failed-count", `${kernel.failed} failed`));
      if (kernel.status === "running") counts.appendChild(el("span", "failed-count", "did not finish"));
      else if (kernel.status === "failed" && !kernel.failed) counts.appendChild(el("span", "failed-count", "compile failed"));
      row.appendChild(counts);
      row.appendChild(el("span", "muted ms", `${Math.round(kernel.ms)} ms`));
      const hits = state.hits && state.hits.kernels.get(kernel.id);
      if (hits) row.appendChild(el("span", "badge", `${hits} pass${hits === 1 ? "" : "es"}`));
      row.addEventListener("click", () => selectKernel(kernel.id));
      list.appendChild(row);
    }
  }

  // --- pass list ------------------------------------------------------------------------
  // A compile that failed outside any pass (a compiler error, a backend error) gets a row of its own.
  function compileFailure(kernel) {
    if (kernel.status !== "failed" || !kernel.error || kernel.steps.some((s) => s.status === "failed")) return null;
    return { kind: "error", seq: "error", status: "failed", name: "compile failed", error: kernel.error };
  }

  function visibleSteps(kernel) {
    const failure = compileFailure(kernel);
    return (failure ? [failure] : []).concat(kernel.steps.filter((step) => {
      if (isCodegen(step) || step.status === "failed" || step.status === "incomplete") return true;
      if (state.phase && step.phase !== state.phase) return false;
      return !(state.hideUnchanged && step.status === "unchanged");
    }));
  }

  function stepsOf(kernel) {
    const failure = compileFailure(kernel);
    return failure ? [failure, ...kernel.steps] : kernel.steps;
  }

  function renderPhases(kernel) {
    const select = $("phase");
    select.replaceChildren(el("option", "", "all phases"));
    select.firstChild.value = "";
    const phases = [...new Set(kernel.steps.filter((s) => !isCodegen(s)).map((s) => s.phase))];
    for (const phase of phases) {
      const option = el("option", "", phase);
      option.value = phase;
      select.appendChild(option);
    }
    if (!phases.includes(state.phase)) state.phase = "";
    select.value = state.phase;
  }

  function renderPasses() {
    const kernel = kernelById.get(state.kernel);
    const list = $("passes");
    list.replaceChildren();
    if (!kernel) return;
    const shown = visibleSteps(kernel);
    $("pass-count").textContent = `${shown.length} of ${kernel.steps.length} steps shown`;
    const hits = state.hits && state.hits.steps.get(kernel.id);
    for (const step of shown) {
      const row = el("button", `step ${statusOf(step)}${step.seq === state.seq ? " active" : ""}`);
      row.type = "button";
      row.dataset.seq = step.seq;
      row.appendChild(el("span", "dot"));
      row.appendChild(el("span", "seq", step.kind === "error" ? "!" : step.seq));
      const name = el("span", "name", isCodegen(step) ? `${step.role} codegen` : step.name);
      row.title = isCodegen(step) ? step.function : step.name;
      name.style.paddingLeft = `${(step.depth || 0) * 14}px`;
      row.appendChild(name);
      const phase = el("span", "phase", isCodegen(step) ? step.language : step.phase || "");
      if (step.edit_status && step.edit_status !== "SYNCED") phase.appendChild(el("span", `edit-badge ${step.edit_status.toLowerCase()}`, step.edit_status));
      row.appendChild(phase);
      const counts = step.status === "changed" ? LTDiff.stats(rowsOf(step)) : null;
      row.appendChild(el("span", "add", counts ? `+${counts.added}` : ""));
      row.appendChild(el("span", "del", counts ? `−${counts.removed}` : ""));
      row.appendChild(el("span", "ms", msText(step)));
      const count = hits && hits.get(step.seq);
      if (count) row.appendChild(el("span", "badge", count));
      row.addEventListener("click", () => selectStep(step.seq));
      list.appendChild(row);
    }
  }

  // --- selection and deep links --------------------------------------------------------------
  function defaultSeq(kernel) {
    const pick = stepsOf(kernel).find((s) => s.status === "failed") || kernel.steps.find((s) => s.status === "changed") || kernel.steps[0];
    return pick ? pick.seq : null;
  }

  function selectKernel(id, seq) {
    const kernel = kernelById.get(id);
    if (!kernel) return;
    state.kernel = id;
    renderKernels();
    renderPhases(kernel);
    renderPasses();
    selectStep(seq !== undefined && stepsOf(kernel).some((s) => s.seq === seq) ? seq : defaultSeq(kernel));
  }

  function selectStep(seq) {
    const kernel = kernelById.get(state.kernel);
    const step = kernel && stepsOf(kernel).find((s) => s.seq === seq);
    state.seq = step ? step.seq : null;
    for (const row of $("passes").querySelectorAll(".step.active")) row.classList.remove("active");
    const row = [...$("passes").querySelectorAll(".step")].find((r) => r.dataset.seq === String(state.seq));
    if (row) {
      row.classList.add("active");
      row.scrollIntoView({ block: "nearest" });
    }
    renderDetail(kernel, step);
    const hash = step ? `#${kernel.id}/${step.seq}` : kernel ? `#${kernel.id}` : "";
    if (hash && location.hash !== hash) history.replaceState(null, "", hash);
  }

  function fromHash() {
    const [kernelId, seqText] = decodeURIComponent(location.hash.slice(1)).split("/");
    if (!kernelById.has(kernelId)) return false;
    selectKernel(kernelId, seqText === undefined || seqText === "" ? undefined : seqText === "error" ? "error" : Number(seqText));
    return true;
  }

  // --- detail view ------------------------------------------------------------------------------
  function errorBox(error) {
    const box = el("section", "error");
    box.appendChild(el("strong", "", `${error.type}: ${error.message}`));
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
      let ok = false;
      try {
        await navigator.clipboard.writeText(value);
        ok = true;
      } catch (_) {
        const area = el("textarea");
        area.value = value;
        document.body.appendChild(area);
        area.select();
        try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
        area.remove();
      }
      button.textContent = ok ? "copied" : "copy failed";
      setTimeout(() => { button.textContent = label; }, 1200);
    });
    return button;
  }

  function irView(text, label) {
    const box = el("section", "ir-box");
    const bar = el("div", "toolbar");
    bar.appendChild(el("span", "label", label));
    bar.appendChild(copyButton("copy", text));
    box.appendChild(bar);
    const pre = el("pre", "ir");
    if (state.regex) appendMarked(pre, text, matchRanges(state.regex, text));
    else appendText(pre, text);
    box.appendChild(pre);
    return box;
  }

  function renderDetail(kernel, step) {
    const main = $("detail");
    main.replaceChildren();
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
    else meta.push(step.language, step.target !== step.language ? step.target : "");
    meta.push(msText(step));
    head.appendChild(el("div", "meta", meta.filter(Boolean).join(" · ")));
    main.appendChild(head);
    if (step.error) main.appendChild(errorBox(step.error));
    if (isCodegen(step)) {
      if (step.edit_status) main.appendChild(editNote(step));
      const panes = el("div", "panes");
      panes.appendChild(irView(snap(step.tir), "final TIR handed to codegen"));
      const compiled = step.generated ? `your edited ${step.language} source, compiled (${step.role})` : `generated ${step.language} source (${step.role})`;
      panes.appendChild(irView(snap(step.source), compiled));
      main.appendChild(panes);
      if (step.generated && step.edit_status === "PATCHED") {
        main.appendChild(el("h3", "", "your edit against the generated source"));
        main.appendChild(diffView({ before: step.generated, after: step.source }, { noFullIR: true, names: ["generated", step.edit_path] }));
      }
    } else if (step.status === "changed") {
      main.appendChild(diffView(step, { names: [`before ${step.name}`, `after ${step.name}`] }));
    } else if (step.status === "unchanged") {
      main.appendChild(el("p", "hint", "This pass left the IR unchanged."));
      main.appendChild(irView(snap(step.before), "IR (before and after)"));
    } else {
      main.appendChild(irView(snap(step.before), "the IR this pass received"));
    }
  }

  function editNote(step) {
    const box = el("section", `edit-note ${step.edit_status.toLowerCase()}`);
    const what = {
      SYNCED: "the working copy matches the generated source",
      PATCHED: "your edit of the working copy was compiled instead of the generated source",
      REGENERATED: "codegen changed; the working copy was refreshed",
      CONFLICT: "codegen changed and the working copy was edited: the new codegen was compiled, your edit was saved aside",
    }[step.edit_status] || "";
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

  function rowsOf(step) {
    const key = `${step.before}:${step.after}`;
    if (!rowsCache.has(key)) rowsCache.set(key, LTDiff.lineRows(snap(step.before), snap(step.after)));
    return rowsCache.get(key);
  }

  function diffView(step, options = {}) {
    const rows = rowsOf(step);
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
    const table = el("table", `diff ${state.mode}`);
    const cols = el("colgroup");
    for (const cls of state.mode === "split" ? ["no", "code", "no", "code"] : ["no", "no", "code"]) cols.appendChild(el("col", cls));
    table.appendChild(cols);
    table.appendChild(el("tbody"));
    fillDiff(table.tBodies[0], rows);
    box.appendChild(table);
    full.addEventListener("click", () => {
      const shown = box.querySelector(".panes");
      if (shown) {
        shown.remove();
        full.textContent = "show full IR";
        return;
      }
      const panes = el("div", "panes");
      panes.appendChild(irView(snap(step.before), "IR before"));
      panes.appendChild(irView(snap(step.after), "IR after"));
      box.insertBefore(panes, table); // right under the toolbar, in view
      full.textContent = "hide full IR";
    });
    return box;
  }

  // Changed rows with CONTEXT lines around them; longer unchanged runs fold into one row.
  function fillDiff(body, rows) {
    const near = new Uint8Array(rows.length);
    rows.forEach((row, i) => {
      if (row.tag !== "=") for (let j = Math.max(0, i - CONTEXT); j <= Math.min(rows.length - 1, i + CONTEXT); j++) near[j] = 1;
    });
    let i = 0;
    while (i < rows.length) {
      if (near[i]) { addRow(body, rows[i]); i++; continue; }
      let end = i;
      while (end < rows.length && !near[end]) end++;
      const hidden = rows.slice(i, end);
      const fold = el("tr", "fold");
      const cell = el("td", "", `⋯ ${hidden.length} unchanged line${hidden.length === 1 ? "" : "s"} (click to show)`);
      cell.colSpan = state.mode === "split" ? 4 : 3;
      fold.appendChild(cell);
      fold.addEventListener("click", () => {
        const frag = document.createDocumentFragment();
        for (const row of hidden) addRow(frag, row);
        fold.replaceWith(frag);
      });
      body.appendChild(fold);
      i = end;
    }
  }

  function codeCell(text, ranges, cls) {
    const td = el("td", `code ${cls}`);
    if (text === undefined) return td;
    const marks = ranges ? ranges.map(([a, b]) => [a, b, "word"]) : [];
    appendMarked(td, text, state.regex ? marks.concat(matchRanges(state.regex, text)) : marks);
    return td;
  }

  function addRow(body, row) {
    const words = row.tag === "~" ? LTDiff.wordRanges(row.old, row.new) : null;
    if (state.mode === "split") {
      const tr = el("tr", `r${row.tag === "=" ? "eq" : "ch"}`);
      tr.appendChild(el("td", "no", row.oldNo || ""));
      tr.appendChild(codeCell(row.old, words && words[0], row.tag === "=" ? "" : row.old === undefined ? "empty" : "del"));
      tr.appendChild(el("td", "no", row.newNo || ""));
      tr.appendChild(codeCell(row.new, words && words[1], row.tag === "=" ? "" : row.new === undefined ? "empty" : "add"));
      body.appendChild(tr);
      return;
    }
    const line = (tag, text, ranges, oldNo, newNo) => {
      const tr = el("tr", tag === " " ? "req" : "rch");
      tr.appendChild(el("td", "no", oldNo || ""));
      tr.appendChild(el("td", "no", newNo || ""));
      const td = codeCell(text, ranges, tag === "-" ? "del" : tag === "+" ? "add" : "");
      td.insertBefore(document.createTextNode(tag), td.firstChild);
      tr.appendChild(td);
      body.appendChild(tr);
    };
    if (row.tag === "=") line(" ", row.old, null, row.oldNo, row.newNo);
    if (row.tag === "-" || row.tag === "~") line("-", row.old, words && words[0], row.oldNo, null);
    if (row.tag === "+" || row.tag === "~") line("+", row.new, words && words[1], null, row.newNo);
  }

  // --- search ------------------------------------------------------------------------------------
  function runSearch(query) {
    const status = $("search-status");
    state.regex = null;
    state.hits = null;
    status.className = "muted";
    status.textContent = "";
    if (query) {
      try {
        state.regex = new RegExp(query, "g");
      } catch (err) {
        status.className = "invalid";
        status.textContent = `not a valid regex: ${err.message}`;
      }
    }
    if (state.regex) {
      const perDigest = new Map();
      const hits = { kernels: new Map(), steps: new Map() };
      let passes = 0, total = 0;
      for (const kernel of kernels) {
        const stepHits = new Map();
        for (const step of stepsOf(kernel)) {
          const key = step.error ? null : isCodegen(step) ? step.source : step.after || step.before;
          const count = key === null ? countMatches(state.regex, searchedText(step)) : perDigest.has(key) ? perDigest.get(key) : perDigest.set(key, countMatches(state.regex, snap(key))).get(key);
          if (count) { stepHits.set(step.seq, count); total += count; }
        }
        if (stepHits.size) { hits.kernels.set(kernel.id, stepHits.size); passes += stepHits.size; }
        hits.steps.set(kernel.id, stepHits);
      }
      state.hits = hits;
      status.dataset.passes = passes;
      status.textContent = `${plural(passes, "pass", "passes")} match${passes === 1 ? "es" : ""} in ${plural(hits.kernels.size, "kernel")} (${plural(total, "hit")})`;
    }
    renderKernels();
    renderPasses();
    selectStep(state.seq);
  }

  // --- controls and keys ----------------------------------------------------------------------------
  function move(delta, onlyChanged) {
    const kernel = kernelById.get(state.kernel);
    if (!kernel) return;
    const shown = visibleSteps(kernel);
    let index = shown.findIndex((s) => s.seq === state.seq);
    for (;;) {
      index += delta;
      if (index < 0 || index >= shown.length) return;
      if (!onlyChanged || shown[index].status === "changed") break;
    }
    selectStep(shown[index].seq);
  }

  function setTheme(theme) {
    document.documentElement.dataset.theme = theme;
    localStorage.setItem("lt-theme", theme);
  }

  function wireControls() {
    let timer = null;
    $("search").addEventListener("input", (event) => {
      clearTimeout(timer);
      timer = setTimeout(() => runSearch(event.target.value), 150);
    });
    $("search").addEventListener("keydown", (event) => {
      if (event.key === "Enter") { clearTimeout(timer); runSearch(event.target.value); }
      if (event.key === "Escape") event.target.blur();
    });
    $("hide-unchanged").addEventListener("change", (event) => {
      event.target.blur();
      state.hideUnchanged = event.target.checked;
      localStorage.setItem("lt-hide-unchanged", state.hideUnchanged ? "1" : "0");
      renderPasses();
      selectStep(state.seq);
    });
    $("phase").addEventListener("change", (event) => {
      event.target.blur(); // hand the keys back to the pass list
      state.phase = event.target.value;
      renderPasses();
      selectStep(state.seq);
    });
    $("mode").addEventListener("click", () => {
      state.mode = state.mode === "split" ? "unified" : "split";
      localStorage.setItem("lt-mode", state.mode);
      $("mode").textContent = modeLabel();
      selectStep(state.seq);
    });
    $("theme").addEventListener("click", () => {
      const dark = document.documentElement.dataset.theme
        ? document.documentElement.dataset.theme === "dark"
        : matchMedia("(prefers-color-scheme: dark)").matches;
      setTheme(dark ? "light" : "dark");
    });
    document.addEventListener("keydown", (event) => {
      const active = document.activeElement;
      const typing = active && (active.id === "search" || active.tagName === "TEXTAREA");
      if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === "j") move(1, false);
      else if (event.key === "k") move(-1, false);
      else if (event.key === "n") move(1, true);
      else if (event.key === "/") { event.preventDefault(); $("search").focus(); }
      else return;
    });
    window.addEventListener("hashchange", fromHash);
  }

  const savedTheme = localStorage.getItem("lt-theme");
  if (savedTheme) document.documentElement.dataset.theme = savedTheme;
  renderHeader();
  wireControls();
  if (!kernels.length) {
    renderDetail(null, null);
  } else if (!fromHash()) {
    // A failed compile opens on its failure; otherwise the first kernel's first change.
    const failing = kernels.find((k) => stepsOf(k).some((s) => s.status === "failed"));
    selectKernel((failing || kernels[0]).id);
  }
  document.body.dataset.ready = "1";
})().catch((err) => {
  document.body.dataset.ready = "error";
  const box = document.createElement("pre");
  box.className = "error";
  box.textContent = `The report could not be shown: ${err && err.stack ? err.stack : err}`;
  document.body.prepend(box);
  throw err;
});
