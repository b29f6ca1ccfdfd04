// @ts-check
"use strict";
/* global LTState, LTText, LTBlocks, LTIndex, LTView, LTDiff, LTCompare, LTCompareView, LTTiming, LTSearch */
// The report page. The file is appended to while the run goes on, so the page builds itself
// once everything is parsed: the run header, the index from the kernel blocks' summaries, and
// a kernel's steps and snapshots when it is opened (its payload inflated then).
async function ltReport() {
  const { el, appendText, plural } = LTText;
  const { msText, statusOf, isCodegen } = LTView;
  const $ = (/** @type {string} */ id) => document.getElementById(id);
  // The header's controls, as report.html makes them.
  const field = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ ($(id));
  const menu = (/** @type {string} */ id) => /** @type {HTMLSelectElement} */ ($(id));
  const page = LTBlocks.gather();
  const kernels = page.kernels;
  const kernelById = new Map(kernels.map((k) => [k.id, k]));
  const store = LTState.create(["hideUnchanged", "mode", "blame", "theme"]);
  const { state } = store;
  const view = LTView.create(state, page.rules, { select: (seq) => selectStep(seq) });
  const stepsOf = LTBlocks.stepsOf;

  // --- header -------------------------------------------------------------------
  function renderHeader() {
    const run = page.run;
    $("title").textContent = "";
    appendText($("title"), `lower-trace · ${run.title || run.script}`);
    const versions = Object.entries(run.versions || {}).map(([k, v]) => `${k} ${v}`).join(" · ");
    const when = run.started ? new Date(run.started * 1000).toLocaleString() : "";
    $("runinfo").textContent = "";
    appendText($("runinfo"), [plural(kernels.length, "kernel"), run.run_id, when, versions].filter(Boolean).join(" · "));
    if (!page.finished) {
      const partial = el("div", "note partial", `the run had not finished when this report was last written (still running, or stopped): ${plural(kernels.length, "kernel")} so far`);
      $("runinfo").appendChild(partial);
    }
    for (const note of page.notes) $("runinfo").appendChild(el("div", "note", note));
    $("kernel-status").querySelector('option[value="running"]').textContent = page.rules.state.DID_NOT_FINISH;
    field("hide-unchanged").checked = state.hideUnchanged;
    $("mode").textContent = modeLabel();
  }

  const modeLabel = () => (state.mode === "split" ? "diff: side by side" : "diff: unified");

  const index = LTIndex.create($("kernels"), $("kernel-count"), kernels, page.rules, (id) => selectKernel(id));

  // --- pass list ------------------------------------------------------------------------
  /** @param {LTKernel} kernel @returns {LTRow[]} */
  function visibleSteps(kernel) {
    const failure = LTBlocks.compileFailure(kernel);
    return (/** @type {LTRow[]} */ (failure ? [failure] : [])).concat(kernel.steps.filter((step) => {
      if (isCodegen(step) || step.status === "failed" || step.status === "incomplete") return true;
      if (state.phase && step.phase !== state.phase) return false;
      return !(state.hideUnchanged && step.status === "unchanged");
    }));
  }

  /** @param {LTKernel} kernel */
  function renderPhases(kernel) {
    const select = menu("phase"), all = el("option", "", "all phases");
    all.value = "";
    select.replaceChildren(all);
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
    const kernel = state.current;
    const list = $("passes");
    list.replaceChildren();
    if (!kernel) return;
    const shown = visibleSteps(kernel);
    // Every row counts, the compile-failure row included, on both sides.
    $("pass-count").textContent = `${shown.length} of ${stepsOf(kernel).length} steps shown`;
    const hits = state.hits && state.hits.steps.get(kernel.id);
    // The name column is as wide as the longest name (with its indent), so names show whole.
    let widest = 0, deepest = 0, phaseWidest = 0, badged = false;
    const frag = document.createDocumentFragment();
    for (const step of shown) {
      const row = el("button", `step ${statusOf(step)}${step.seq === state.seq ? " active" : ""}`);
      row.type = "button";
      row.dataset.seq = String(step.seq);
      row.appendChild(el("span", "dot"));
      row.appendChild(el("span", "seq", step.kind === "error" ? "!" : step.seq));
      const label = isCodegen(step) ? `${step.role} codegen` : step.name;
      const name = el("span", "name", label);
      if (step.layouts && step.layouts.length) name.appendChild(el("span", "layout-badge", " ▦")).title = "this pass set fragment layouts: pictures in its view";
      row.title = LTText.visible(isCodegen(step) ? step.function : step.name);
      name.style.paddingLeft = `${(step.depth || 0) * 14}px`;
      widest = Math.max(widest, String(label).length);
      deepest = Math.max(deepest, step.depth || 0);
      row.appendChild(name);
      const phaseText = isCodegen(step) ? step.language : step.phase || "";
      const phase = el("span", "phase", phaseText);
      phase.title = LTText.visible(phaseText);
      phaseWidest = Math.max(phaseWidest, String(phaseText).length);
      const edit = page.rules.edit[step.edit_status];
      if (edit && edit.badge) {
        phase.appendChild(el("span", `edit-badge ${step.edit_status.toLowerCase()}`, step.edit_status));
        badged = true;
      }
      row.appendChild(phase);
      const counts = step.status === "changed" ? LTDiff.stats(view.rowsOf(kernel, step)) : null;
      row.appendChild(el("span", "add", counts ? `+${counts.added}` : ""));
      row.appendChild(el("span", "del", counts ? `−${counts.removed}` : ""));
      row.appendChild(el("span", "ms", msText(step, true)));
      const count = hits && hits.get(step.seq);
      if (count) row.appendChild(el("span", "badge", count));
      frag.appendChild(row);
    }
    list.style.setProperty("--name-width", `calc(${Math.min(widest, 48)}ch + ${deepest * 14}px + 2px)`);
    // Phases (11px in a 12px row) take what is left, up to their longest; names come first.
    list.style.setProperty("--phase-width", `calc(${Math.min(phaseWidest, 24) * 11 / 12}ch + ${badged ? "7em" : "2px"})`);
    list.appendChild(frag);
  }

  // --- compare with another kernel of the run ------------------------------------------------
  // The other kernels, variants of the same name first (what an autotune sweep compares).
  /** @param {LTKernel} kernel */
  function renderCompareWith(kernel) {
    const tools = $("compare-tools"), select = menu("compare-with");
    $("kernel-tools").hidden = false;
    tools.hidden = kernels.length < 2;
    if (tools.hidden) return;
    const others = kernels.filter((k) => k.id !== kernel.id);
    others.sort((x, y) => Number(x.name !== kernel.name) - Number(y.name !== kernel.name));
    const none = el("option", "", `another kernel… (${others.length})`);
    none.value = "";
    select.replaceChildren(none);
    for (const other of others) {
      const option = el("option", "", kernelLabel(other));
      option.value = other.id;
      select.appendChild(option);
    }
    select.value = state.compare ? state.compare.b : "";
  }

  const kernelLabel = (/** @type {Pick<LTKernelSummary, "id" | "name" | "variant" | "status">} */ k) => [`${k.id} ${k.name}`, k.variant || "", k.status !== "ok" ? k.status : ""].filter(Boolean).join(" · ");

  let comparing = 0;
  // Compares the open kernel (A) with another (B): the rows, first divergence and diffs in the detail pane.
  async function compareWith(otherId, at) {
    const a = state.current, summary = kernelById.get(otherId);
    if (!a || !summary || otherId === a.id) return;
    const mine = ++comparing;
    document.body.dataset.loading = "1";
    let b;
    try {
      b = await LTBlocks.open(summary);
    } catch (err) {
      delete document.body.dataset.loading;
      $("detail").replaceChildren(el("p", "error", `The data of kernel ${summary.name} could not be read (${err && err.message ? err.message : err}).`));
      return;
    }
    if (mine !== comparing || state.current !== a) return;
    const cmp = LTCompare.compare(a, b);
    state.seq = null;
    for (const row of $("passes").querySelectorAll(".step.active")) row.classList.remove("active");
    state.compare = { a: a.id, b: b.id, view: null };
    state.compare.view = LTCompareView.create($("detail"), cmp, view, [kernelLabel(a), kernelLabel(b)], state);
    menu("compare-with").value = b.id;
    state.compare.view.start(at);
    delete document.body.dataset.loading;
  }

  // The comparison row shown is in the URL: #A~B/row.
  store.subscribe("cmpRow", (row) => {
    if (!state.compare) return;
    const hash = `#${state.compare.a}~${state.compare.b}/${row}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
  });

  function stopComparing() {
    if (!state.compare) return;
    state.compare = null;
    comparing++;
    menu("compare-with").value = "";
  }

  // --- timing ---------------------------------------------------------------------------------------
  // The open kernel's chart (#k1/timing) or the run's (#timing) in the detail pane; a bar opens its pass.
  function leaveSteps() {
    stopComparing();
    state.seq = null;
    for (const row of $("passes").querySelectorAll(".step.active")) row.classList.remove("active");
  }

  const paneRoom = () => Math.max(480, $("detail").clientWidth - 40);

  // Charts and the passes they open are history entries of their own: Back goes from a pass to
  // the chart, and from a chart opened by its button (or t) to where you were.
  const goTo = (hash, push) => { if (location.hash !== hash) history[push ? "pushState" : "replaceState"](null, "", hash); };

  function showKernelTiming(push = false) {
    const kernel = state.current;
    if (!kernel) return;
    leaveSteps();
    state.timing = "kernel";
    const open = (seq) => { goTo(`#${kernel.id}/${seq}`, true); selectStep(seq); };
    const order = (value) => { state.timingOrder = value; };
    $("detail").replaceChildren(LTTiming.kernelChart(kernel, open, state.timingOrder, paneRoom(), order));
    $("detail").scrollTop = 0;
    goTo(`#${kernel.id}/timing`, push);
  }

  function showRunTiming(push = false) {
    leaveSteps();
    state.timing = "run";
    const open = (id, seq) => { goTo(`#${id}/${seq}`, true); selectKernel(id, seq); };
    $("detail").replaceChildren(LTTiming.runChart(kernels, open, false, paneRoom()));
    $("detail").scrollTop = 0;
    goTo("#timing", push);
  }

  // --- selection and deep links --------------------------------------------------------------
  function defaultSeq(kernel) {
    const pick = stepsOf(kernel).find((s) => s.status === "failed") || kernel.steps.find((s) => s.status === "changed") || kernel.steps[0];
    return pick ? pick.seq : null;
  }

  let opening = 0;
  // Opens a kernel: inflates its payload (and the earlier blocks it names) unless recently open.
  async function selectKernel(id, seq) {
    const summary = kernelById.get(id);
    if (!summary) return;
    const mine = ++opening;
    stopComparing();
    index.setActive(id);
    if (!state.current || state.current.id !== id) {
      // Nothing of the previous kernel stays clickable while this one is inflated.
      $("passes").replaceChildren();
      $("pass-count").textContent = "loading…";
    }
    document.body.dataset.loading = "1";
    let kernel;
    try {
      kernel = await LTBlocks.open(summary);
    } catch (err) {
      if (mine !== opening) return;
      state.current = null;
      $("pass-count").textContent = "";
      $("detail").replaceChildren(el("p", "error", `The data of kernel ${summary.name} could not be read (${err && err.message ? err.message : err}); the file may have been cut off while it was written.`));
      delete document.body.dataset.loading;
      return;
    }
    if (mine !== opening) return;
    state.current = kernel;
    renderCompareWith(kernel);
    renderPhases(kernel);
    renderPasses();
    if (seq === undefined && state.timing === "kernel") showKernelTiming(); // browsing kernels' charts
    else selectStep(seq !== undefined && stepsOf(kernel).some((s) => s.seq === seq) ? seq : defaultSeq(kernel));
    delete document.body.dataset.loading;
  }

  function selectStep(seq) {
    stopComparing();
    state.timing = null;
    const kernel = state.current;
    const step = kernel && stepsOf(kernel).find((s) => s.seq === seq);
    state.seq = step ? step.seq : null;
    for (const row of $("passes").querySelectorAll(".step.active")) row.classList.remove("active");
    const row = [...$("passes").querySelectorAll(".step")].find((r) => r instanceof HTMLElement && r.dataset.seq === String(state.seq));
    if (row) {
      row.classList.add("active");
      row.scrollIntoView({ block: "nearest" });
    }
    view.renderDetail($("detail"), kernel, step);
    const hash = step ? `#${kernel.id}/${step.seq}` : kernel ? `#${kernel.id}` : "";
    if (hash && location.hash !== hash) history.replaceState(null, "", hash);
  }

  // Opens the kernel and step the URL names; false if it names none.
  async function fromHash() {
    const [kernelPart, seqText] = decodeURIComponent(location.hash.slice(1)).split("/");
    if (kernelPart === "timing" && kernels.length) {
      if (!state.current) await selectKernel(kernels[0].id);
      showRunTiming();
      return true;
    }
    const [kernelId, otherId] = kernelPart.split("~");
    if (!kernelById.has(kernelId)) return false;
    if (otherId && kernelById.has(otherId)) { // a comparison: #A~B/row
      const row = seqText === "source" ? "source" : /^\d+$/.test(seqText || "") ? Number(seqText) : undefined;
      if (state.compare && state.compare.a === kernelId && state.compare.b === otherId) {
        if (row !== undefined && row !== state.compare.view.current()) state.compare.view.select(row);
        return true;
      }
      await selectKernel(kernelId);
      await compareWith(otherId, row);
      return true;
    }
    if (seqText === "timing") {
      await selectKernel(kernelId);
      showKernelTiming();
      return true;
    }
    await selectKernel(kernelId, seqText === undefined || seqText === "" ? undefined : seqText === "error" ? "error" : Number(seqText));
    return true;
  }

  // --- search ------------------------------------------------------------------------------------
  // Kernels are inflated on demand, block by block, with progress; a newer query cancels.
  async function runSearch(query) {
    const status = $("search-status");
    LTSearch.cancel();
    state.regex = null;
    state.hits = null;
    status.className = "muted";
    status.textContent = "";
    delete status.dataset.passes;
    delete status.dataset.done;
    if (query) {
      try {
        state.regex = new RegExp(query, "g");
      } catch (err) {
        status.className = "invalid";
        status.textContent = `not a valid regex: ${err.message}`;
      }
    }
    index.setHits(null);
    renderPasses();
    selectStep(state.seq); // highlights in the open pass at once
    if (!state.regex) {
      status.dataset.done = "1";
      return;
    }
    const regex = state.regex;
    status.textContent = `searching 0/${kernels.length} kernels…`;
    const hits = await LTSearch.run(regex, kernels, (done, count) => { status.textContent = `searching ${done}/${count} kernels…`; });
    if (!hits || state.regex !== regex) return; // a newer search took over
    state.hits = hits;
    status.dataset.passes = String(hits.passes);
    status.textContent = `${plural(hits.passes, "pass", "passes")} match${hits.passes === 1 ? "es" : ""} in ${plural(hits.kernels.size, "kernel")} (${plural(hits.total, "hit")})`;
    status.dataset.done = "1";
    index.setHits(hits.kernels);
    renderPasses();
    selectStep(state.seq);
  }

  // --- controls and keys ----------------------------------------------------------------------------
  function move(delta, onlyChanged) {
    const kernel = state.current;
    if (!kernel) return;
    const shown = visibleSteps(kernel);
    let at = shown.findIndex((s) => s.seq === state.seq);
    for (;;) {
      at += delta;
      if (at < 0 || at >= shown.length) return;
      if (!onlyChanged || shown[at].status === "changed") break;
    }
    selectStep(shown[at].seq);
  }

  function setTheme(theme) {
    document.documentElement.dataset.theme = theme;
    state.theme = theme;
  }

  const typing = (/** @type {Element|null} */ node) => node && (node.tagName === "TEXTAREA" || (node instanceof HTMLInputElement && (node.type === "search" || node.type === "text")));

  function wireControls() {
    const search = field("search"), kernelFilter = field("kernel-filter"), hideUnchanged = field("hide-unchanged");
    const compareWithMenu = menu("compare-with"), kernelStatus = menu("kernel-status"), phase = menu("phase");
    let timer = null;
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => runSearch(search.value), 150);
    });
    search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { clearTimeout(timer); runSearch(search.value); }
      if (event.key === "Escape") search.blur();
    });
    $("passes").addEventListener("click", (event) => {
      const row = LTText.closest(event, ".step");
      if (!row || !state.current) return;
      const step = stepsOf(state.current).find((s) => String(s.seq) === row.dataset.seq);
      if (step) selectStep(step.seq);
    });
    const filterKernels = () => index.filter(kernelFilter.value, kernelStatus.value);
    kernelFilter.addEventListener("input", filterKernels);
    kernelFilter.addEventListener("keydown", (event) => {
      if (event.key === "Escape") kernelFilter.blur();
      if (event.key === "Enter") { // open the first kernel the filter leaves
        const first = /** @type {HTMLElement|null} */ ($("kernels").querySelector(".kernel-row:not([hidden])"));
        if (first) selectKernel(first.dataset.kernel);
      }
    });
    $("timing-kernel").addEventListener("click", () => showKernelTiming(true));
    $("timing-run").addEventListener("click", () => showRunTiming(true));
    compareWithMenu.addEventListener("change", () => {
      compareWithMenu.blur();
      if (compareWithMenu.value) compareWith(compareWithMenu.value);
      else selectStep(defaultSeq(state.current));
    });
    kernelStatus.addEventListener("change", () => {
      kernelStatus.blur();
      filterKernels();
    });
    hideUnchanged.addEventListener("change", () => {
      hideUnchanged.blur();
      state.hideUnchanged = hideUnchanged.checked;
      renderPasses();
      selectStep(state.seq);
    });
    phase.addEventListener("change", () => {
      phase.blur(); // hand the keys back to the pass list
      state.phase = phase.value;
      renderPasses();
      selectStep(state.seq);
    });
    $("mode").addEventListener("click", () => {
      state.mode = state.mode === "split" ? "unified" : "split";
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
      if (typing(document.activeElement) || event.ctrlKey || event.metaKey || event.altKey) return;
      if (state.compare && "jkn".includes(event.key)) state.compare.view.move(event.key === "k" ? -1 : 1, event.key === "n");
      else if (event.key === "j") move(1, false);
      else if (event.key === "k") move(-1, false);
      else if (event.key === "n") move(1, true);
      else if (event.key === "t") showKernelTiming(true);
      else if (event.key === "/") { event.preventDefault(); $("search").focus(); }
    });
    window.addEventListener("hashchange", () => { fromHash(); });
  }

  if (state.theme) document.documentElement.dataset.theme = state.theme;
  renderHeader();
  wireControls();
  if (!kernels.length) {
    view.renderDetail($("detail"), null, null);
  } else if (!(await fromHash())) {
    // A failed compile opens on its failure; otherwise the first kernel's first change.
    const failing = kernels.find((k) => k.failed || (k.status === "failed" && k.error));
    await selectKernel((failing || kernels[0]).id);
  }
  document.body.dataset.ready = "1";
}

// The kernel blocks follow this script in the file: start once the whole file is parsed.
function ltStart() {
  ltReport().catch((err) => {
    document.body.dataset.ready = "error";
    const box = document.createElement("pre");
    box.className = "error";
    box.textContent = `The report could not be shown: ${err && err.stack ? err.stack : err}`;
    document.body.prepend(box);
    throw err;
  });
}
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ltStart, { once: true });
else ltStart();
