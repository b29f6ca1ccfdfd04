// @ts-check
import { LTText } from "./text.js";
import { LTBlocks } from "./blocks.js";
import { LTSearch } from "./search.js";
import { LTTiming } from "./timing.js";
/** @import { LTIndex } from "./kernels.js" */
/** @import { LTPassList } from "./passlist.js" */
/** @import { LTKernel, LTKernelSummary } from "./payload.js" */
/** @import { LTActions } from "./report.js" */
/** @import { LTStore, PageState } from "./state.js" */
/** @import { LTDetailView } from "./view.js" */
/**
 * @typedef {Object} LTReportContext  what the report page's views share
 * @property {ReturnType<typeof LTBlocks.gather>} page  the run's header and kernel summaries
 * @property {LTStore} store
 * @property {PageState} state
 * @property {LTDetailView} view  the detail pane's renderer (LTView.create)
 * @property {ReturnType<typeof LTIndex.create>} index  the kernel list
 * @property {LTActions} act  what the page's controls do (they assign the state)
 * @property {ReturnType<typeof LTPassList.create>} passes  the pass list
 */
// The report page's views other than the pass list (passlist.js): the header, the detail pane
// (a step, or a timing chart), the URL, the compare menu, the search box. Each renders what it
// shows when the state's fields it watches are assigned; the controls only assign the state.
export const LTReportViews = (() => {
  const { el, appendText, plural } = LTText;
  const $ = (/** @type {string} */ id) => document.getElementById(id);
  const menu = (/** @type {string} */ id) => /** @type {HTMLSelectElement} */ ($(id));

  /** The run's title and facts, the status menu's wording, the header's toggles. @param {LTReportContext} ctx */
  function header(ctx) {
    const { page, state, store } = ctx;
    const run = page.run, kernels = page.kernels;
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
    /** @type {HTMLInputElement} */ ($("hide-unchanged")).checked = state.hideUnchanged;
    const modeLabel = () => { $("mode").textContent = state.mode === "split" ? "diff: side by side" : "diff: unified"; };
    modeLabel();
    store.watch(["mode"], modeLabel);
    if (state.theme) document.documentElement.dataset.theme = state.theme;
    store.watch(["theme"], () => { document.documentElement.dataset.theme = state.theme; });
  }

  /** A kernel as the compare menu names it. @param {Pick<LTKernelSummary, "id" | "name" | "variant" | "status">} k */
  const kernelLabel = (k) => [`${k.id} ${k.name}`, k.variant || "", k.status !== "ok" ? k.status : ""].filter(Boolean).join(" · ");

  // The other kernels, variants of the same name first (what an autotune sweep compares).
  /** @param {LTKernelSummary[]} kernels @param {LTKernel} kernel */
  function fillCompareMenu(kernels, kernel) {
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
  }

  /** The "compare with" menu: the open kernel's others, showing the one compared. @param {LTReportContext} ctx */
  function compareMenu(ctx) {
    const { state, store } = ctx;
    const showCompared = () => { menu("compare-with").value = state.compare ? state.compare.b : ""; };
    store.watch(["current"], () => {
      if (!state.current) return;
      fillCompareMenu(ctx.page.kernels, state.current);
      showCompared();
    });
    store.watch(["compare"], showCompared);
  }

  const paneRoom = () => Math.max(480, $("detail").clientWidth - 40);

  /** The detail pane: the step shown, or a timing chart (a comparison draws the pane itself). @param {LTReportContext} ctx */
  function detail(ctx) {
    const { state, store, act } = ctx;
    const pane = $("detail");
    store.watch(["seq", "timing", "mode", "regex"], () => {
      if (state.compare) return;
      if (state.timing === "kernel") {
        // A bar opens its pass, as a history entry of its own: Back goes to the chart.
        const kernel = state.current;
        const open = (seq) => { act.goTo(`#${kernel.id}/${seq}`, true); act.showStep(seq); };
        const order = (value) => { state.timingOrder = value; };
        pane.replaceChildren(LTTiming.kernelChart(kernel, open, state.timingOrder, paneRoom(), order));
        pane.scrollTop = 0;
      } else if (state.timing === "run") {
        const open = (id, seq) => { act.goTo(`#${id}/${seq}`, true); act.selectKernel(id, seq); };
        pane.replaceChildren(LTTiming.runChart(ctx.page.kernels, open, false, paneRoom()));
        pane.scrollTop = 0;
      } else {
        const kernel = state.current;
        ctx.view.renderDetail(pane, kernel, kernel && LTBlocks.stepsOf(kernel).find((s) => s.seq === state.seq));
      }
    });
  }

  /** The URL names the step shown (#k1/5); charts and comparisons write theirs. @param {LTReportContext} ctx */
  function address(ctx) {
    const { state, store } = ctx;
    store.watch(["seq"], () => {
      if (state.compare || state.timing) return;
      const kernel = state.current;
      const hash = kernel && state.seq !== null ? `#${kernel.id}/${state.seq}` : kernel ? `#${kernel.id}` : "";
      if (hash && location.hash !== hash) history.replaceState(null, "", hash);
    });
    // The comparison row shown is in the URL: #A~B/row.
    store.subscribe("cmpRow", (row) => {
      if (!state.compare) return;
      const hash = `#${state.compare.a}~${state.compare.b}/${row}`;
      if (location.hash !== hash) history.replaceState(null, "", hash);
    });
  }

  /**
   * The search box: a regex over every snapshot. Kernels are inflated on demand, block by block,
   * with progress; a newer query cancels. The kernel list badges the kernels it hits.
   * @param {LTReportContext} ctx
   */
  function search(ctx) {
    const { state, store, act } = ctx;
    const kernels = ctx.page.kernels;
    const box = /** @type {HTMLInputElement} */ ($("search")), status = $("search-status");
    store.watch(["hits"], () => ctx.index.setHits(state.hits ? state.hits.kernels : null));

    async function run(query) {
      LTSearch.cancel();
      status.className = "muted";
      status.textContent = "";
      delete status.dataset.passes;
      delete status.dataset.done;
      let regex = null;
      if (query) {
        try {
          regex = new RegExp(query, "g");
        } catch (err) {
          status.className = "invalid";
          status.textContent = `not a valid regex: ${err.message}`;
        }
      }
      // The open pass shows its highlights at once (a chart or comparison gives way to it).
      store.batch(() => { state.regex = regex; state.hits = null; act.showStep(state.seq); });
      if (!regex) {
        status.dataset.done = "1";
        return;
      }
      status.textContent = `searching 0/${kernels.length} kernels…`;
      const hits = await LTSearch.run(regex, kernels, (done, count) => { status.textContent = `searching ${done}/${count} kernels…`; });
      if (!hits || state.regex !== regex) return; // a newer search took over
      status.dataset.passes = String(hits.passes);
      status.textContent = `${plural(hits.passes, "pass", "passes")} match${hits.passes === 1 ? "es" : ""} in ${plural(hits.kernels.size, "kernel")} (${plural(hits.total, "hit")})`;
      status.dataset.done = "1";
      store.batch(() => { state.hits = hits; act.showStep(state.seq); });
    }

    let timer = null;
    box.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => run(box.value), 150);
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { clearTimeout(timer); run(box.value); }
      if (event.key === "Escape") box.blur();
    });
  }

  return { header, compareMenu, detail, address, search, kernelLabel };
})();
