// @ts-check
import { LTState } from "./state.js";
import { LTText } from "./text.js";
import { LTBlocks } from "./blocks.js";
import { LTIndex } from "./kernels.js";
import { LTView } from "./view.js";
import { LTCompare } from "./compare.js";
import { LTCompareView } from "./compare_view.js";
import { LTPassList } from "./passlist.js";
import { LTReportViews } from "./report_views.js";
/** @import { LTReportContext } from "./report_views.js" */
/** @typedef {ReturnType<typeof ltActions> & Pick<ReturnType<typeof ltCompareActions>, "compareWith"> & {fromHash: () => Promise<boolean>}} LTActions what the actions below give the views */
// The report page. The file is appended to while the run goes on, so the page builds itself
// once everything is parsed: the run header, the index from the kernel blocks' summaries, and
// a kernel's steps and snapshots when it is opened (its payload inflated then).
// The views (report_views.js, passlist.js) watch the state's fields they show; what the user
// does (the actions below) only assigns the state, in one batch per action.

/** A kernel's data could not be read: say so in the detail pane. @param {string} name @param {string} tail */
function ltUnreadable(name, err, tail) {
  const text = `The data of kernel ${name} could not be read (${err && err.message ? err.message : err})${tail}`;
  document.getElementById("detail").replaceChildren(LTText.el("p", "error", text));
}

/** The comparison with another kernel of the run, in the detail pane. @param {LTReportContext} ctx */
function ltCompareActions(ctx) {
  const { state, store } = ctx;
  let comparing = 0; // a newer comparison (or leaving one) makes an older one's load moot

  function stop() {
    if (!state.compare) return;
    state.compare = null;
    comparing++;
  }

  // Compares the open kernel (A) with another (B): the rows, first divergence and diffs in the detail pane.
  async function compareWith(otherId, at) {
    const a = state.current, summary = ctx.page.kernels.find((k) => k.id === otherId);
    if (!a || !summary || otherId === a.id) return;
    const mine = ++comparing;
    document.body.dataset.loading = "1";
    let b;
    try {
      b = await LTBlocks.open(summary);
    } catch (err) {
      delete document.body.dataset.loading;
      ltUnreadable(summary.name, err, ".");
      return;
    }
    if (mine !== comparing || state.current !== a) return;
    const cmp = LTCompare.compare(a, b);
    store.batch(() => {
      state.seq = null;
      state.compare = { a: a.id, b: b.id, view: null };
    });
    const labels = [LTReportViews.kernelLabel(a), LTReportViews.kernelLabel(b)];
    state.compare.view = LTCompareView.create(document.getElementById("detail"), cmp, ctx.view, labels, state);
    state.compare.view.start(at);
    delete document.body.dataset.loading;
  }

  return { stop, compareWith };
}

/** Opening kernels, steps and charts. @param {LTReportContext} ctx @param {ReturnType<typeof ltCompareActions>} compare */
function ltActions(ctx, compare) {
  const { state, store } = ctx;
  const kernelById = new Map(ctx.page.kernels.map((k) => [k.id, k]));
  const stepsOf = LTBlocks.stepsOf;
  // Charts and the passes they open are history entries of their own: Back goes from a pass to
  // the chart, and from a chart opened by its button (or t) to where you were.
  const goTo = (hash, push) => { if (location.hash !== hash) history[push ? "pushState" : "replaceState"](null, "", hash); };
  let opening = 0;

  /** Shows a step of the open kernel (null: none), leaving a chart or a comparison. */
  function showStep(seq) {
    store.batch(() => {
      compare.stop();
      state.timing = null;
      const kernel = state.current;
      const step = kernel && stepsOf(kernel).find((s) => s.seq === seq);
      state.seq = step ? step.seq : null;
    });
  }

  // The open kernel's chart (#k1/timing) or the run's (#timing) in the detail pane.
  function showTiming(which, hash, push) {
    store.batch(() => {
      compare.stop();
      state.seq = null;
      state.timing = which;
    });
    goTo(hash, push);
  }
  const showKernelTiming = (push = false) => { if (state.current) showTiming("kernel", `#${state.current.id}/timing`, push); };
  const showRunTiming = (push = false) => showTiming("run", "#timing", push);

  function defaultSeq(kernel) {
    const pick = stepsOf(kernel).find((s) => s.status === "failed") || kernel.steps.find((s) => s.status === "changed") || kernel.steps[0];
    return pick ? pick.seq : null;
  }

  // Opens a kernel: inflates its payload (and the earlier blocks it names) unless recently open.
  async function selectKernel(id, seq) {
    const summary = kernelById.get(id);
    if (!summary) return;
    const mine = ++opening;
    compare.stop();
    ctx.index.setActive(id);
    if (!state.current || state.current.id !== id) ctx.passes.loading();
    document.body.dataset.loading = "1";
    let kernel;
    try {
      kernel = await LTBlocks.open(summary);
    } catch (err) {
      if (mine !== opening) return;
      state.current = null;
      document.getElementById("pass-count").textContent = "";
      ltUnreadable(summary.name, err, "; the file may have been cut off while it was written.");
      delete document.body.dataset.loading;
      return;
    }
    if (mine !== opening) return;
    store.batch(() => {
      state.current = kernel;
      if (!LTPassList.phasesOf(kernel).includes(state.phase)) state.phase = "";
      if (seq === undefined && state.timing === "kernel") showKernelTiming(); // browsing kernels' charts
      else showStep(seq !== undefined && stepsOf(kernel).some((s) => s.seq === seq) ? seq : defaultSeq(kernel));
    });
    delete document.body.dataset.loading;
  }

  // j / k / n: the next or previous row of the list (n: the next that changed the IR).
  function move(delta, onlyChanged) {
    const kernel = state.current;
    if (!kernel) return;
    const shown = ctx.passes.visible(kernel);
    let at = shown.findIndex((s) => s.seq === state.seq);
    for (;;) {
      at += delta;
      if (at < 0 || at >= shown.length) return;
      if (!onlyChanged || shown[at].status === "changed") break;
    }
    showStep(shown[at].seq);
  }

  /** Assigns the state fn changes, then shows the same step again (the views render once). */
  const thenShow = (fn) => store.batch(() => { fn(); showStep(state.seq); });

  return { goTo, showStep, showKernelTiming, showRunTiming, selectKernel, move, defaultSeq, thenShow };
}

/** Opens the kernel and step (or comparison, or chart) the URL names; false if it names none. @param {LTReportContext} ctx */
async function ltFromHash(ctx) {
  const { state, act } = ctx;
  const kernels = ctx.page.kernels;
  const known = (/** @type {string} */ id) => kernels.some((k) => k.id === id);
  const [kernelPart, seqText] = decodeURIComponent(location.hash.slice(1)).split("/");
  if (kernelPart === "timing" && kernels.length) {
    if (!state.current) await act.selectKernel(kernels[0].id);
    act.showRunTiming();
    return true;
  }
  const [kernelId, otherId] = kernelPart.split("~");
  if (!known(kernelId)) return false;
  if (otherId && known(otherId)) { // a comparison: #A~B/row
    const row = seqText === "source" ? "source" : /^\d+$/.test(seqText || "") ? Number(seqText) : undefined;
    if (state.compare && state.compare.a === kernelId && state.compare.b === otherId) {
      if (row !== undefined && row !== state.compare.view.current()) state.compare.view.select(row);
      return true;
    }
    await act.selectKernel(kernelId);
    await act.compareWith(otherId, row);
    return true;
  }
  if (seqText === "timing") {
    await act.selectKernel(kernelId);
    act.showKernelTiming();
    return true;
  }
  await act.selectKernel(kernelId, seqText === undefined || seqText === "" ? undefined : seqText === "error" ? "error" : Number(seqText));
  return true;
}

/** The header's and the list's controls, and the keys. @param {LTReportContext} ctx */
function ltWireControls(ctx) {
  const { state, act } = ctx;
  const $ = (/** @type {string} */ id) => document.getElementById(id);
  const field = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ ($(id));
  const menu = (/** @type {string} */ id) => /** @type {HTMLSelectElement} */ ($(id));
  const kernelFilter = field("kernel-filter"), hideUnchanged = field("hide-unchanged");
  const compareWithMenu = menu("compare-with"), kernelStatus = menu("kernel-status"), phase = menu("phase");
  $("passes").addEventListener("click", (event) => {
    const row = LTText.closest(event, ".step");
    if (!row || !state.current) return;
    const step = LTBlocks.stepsOf(state.current).find((s) => String(s.seq) === row.dataset.seq);
    if (step) act.showStep(step.seq);
  });
  const filterKernels = () => ctx.index.filter(kernelFilter.value, kernelStatus.value);
  kernelFilter.addEventListener("input", filterKernels);
  kernelFilter.addEventListener("keydown", (event) => {
    if (event.key === "Escape") kernelFilter.blur();
    if (event.key === "Enter") { // open the first kernel the filter leaves
      const first = /** @type {HTMLElement|null} */ ($("kernels").querySelector(".kernel-row:not([hidden])"));
      if (first) act.selectKernel(first.dataset.kernel);
    }
  });
  $("timing-kernel").addEventListener("click", () => act.showKernelTiming(true));
  $("timing-run").addEventListener("click", () => act.showRunTiming(true));
  compareWithMenu.addEventListener("change", () => {
    compareWithMenu.blur();
    if (compareWithMenu.value) act.compareWith(compareWithMenu.value);
    else act.showStep(act.defaultSeq(state.current));
  });
  kernelStatus.addEventListener("change", () => {
    kernelStatus.blur();
    filterKernels();
  });
  hideUnchanged.addEventListener("change", () => {
    hideUnchanged.blur();
    act.thenShow(() => { state.hideUnchanged = hideUnchanged.checked; });
  });
  phase.addEventListener("change", () => {
    phase.blur(); // hand the keys back to the pass list
    act.thenShow(() => { state.phase = phase.value; });
  });
  $("mode").addEventListener("click", () => act.thenShow(() => { state.mode = state.mode === "split" ? "unified" : "split"; }));
  $("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    state.theme = dark ? "light" : "dark";
  });
  const typing = (/** @type {Element|null} */ node) => node && (node.tagName === "TEXTAREA" || (node instanceof HTMLInputElement && (node.type === "search" || node.type === "text")));
  document.addEventListener("keydown", (event) => {
    if (typing(document.activeElement) || event.ctrlKey || event.metaKey || event.altKey) return;
    if (state.compare && "jkn".includes(event.key)) state.compare.view.move(event.key === "k" ? -1 : 1, event.key === "n");
    else if (event.key === "j") act.move(1, false);
    else if (event.key === "k") act.move(-1, false);
    else if (event.key === "n") act.move(1, true);
    else if (event.key === "t") act.showKernelTiming(true);
    else if (event.key === "/") { event.preventDefault(); $("search").focus(); }
  });
  window.addEventListener("hashchange", () => { act.fromHash(); });
}

async function ltReport() {
  const page = LTBlocks.gather();
  const store = LTState.create(["hideUnchanged", "mode", "blame", "theme"]);
  const { state } = store;
  const ctx = { page, store, state, view: null, index: null, act: null, passes: null };
  const compare = ltCompareActions(ctx);
  ctx.act = { ...ltActions(ctx, compare), compareWith: compare.compareWith, fromHash: () => ltFromHash(ctx) };
  ctx.view = LTView.create(state, page.rules, { select: (seq) => ctx.act.showStep(seq) });
  ctx.index = LTIndex.create(document.getElementById("kernels"), document.getElementById("kernel-count"), page.kernels, page.rules, (id) => ctx.act.selectKernel(id));
  // The order the views watch in is the order they render in after an action.
  LTReportViews.header(ctx);
  LTReportViews.compareMenu(ctx);
  ctx.passes = LTPassList.create(store, page.rules, ctx.view);
  LTReportViews.detail(ctx);
  LTReportViews.address(ctx);
  LTReportViews.search(ctx);
  ltWireControls(ctx);
  if (!page.kernels.length) {
    ctx.act.showStep(null);
  } else if (!(await ctx.act.fromHash())) {
    // A failed compile opens on its failure; otherwise the first kernel's first change.
    const failing = page.kernels.find((k) => k.failed || (k.status === "failed" && k.error));
    await ctx.act.selectKernel((failing || page.kernels[0]).id);
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

// The page's only globals (bundle.py sets an entry's exports on window): the modules the browser
// tests drive directly, to hold the page's answers to Python's (testing/browser, page.evaluate).
export { LTBlame } from "./blame.js";
export { LTDiff } from "./diff.js";
export { LTLayout } from "./layout.js";
export { LTBlocks, LTCompare, LTState, LTText };
