// @ts-check
import { LTText } from "./text.js";
import { LTBlocks } from "./blocks.js";
import { LTView } from "./view.js";
import { LTDiff } from "./diff.js";
/** @import { LTKernel, LTRow, LTRules } from "./payload.js" */
/** @import { LTStore, PageState } from "./state.js" */
/** @import { LTDetailView } from "./view.js" */
// The report's pass list: the phase menu, a row per step of the open kernel (with its diff's
// counts, its time, the search's hits) and the active row. It watches the state it shows.
export const LTPassList = (() => {
  const { el } = LTText;
  const { msText, statusOf, isCodegen } = LTView;
  const $ = (/** @type {string} */ id) => document.getElementById(id);

  /** The phases of a kernel's passes, in order. @param {LTKernel} kernel */
  const phasesOf = (kernel) => [...new Set(kernel.steps.filter((s) => !isCodegen(s)).map((s) => s.phase))];

  /** The rows the list shows: failures and codegen always, the rest as the phase and hide-unchanged say. @param {PageState} state @param {LTKernel} kernel @returns {LTRow[]} */
  function visibleSteps(state, kernel) {
    const failure = LTBlocks.compileFailure(kernel);
    return (/** @type {LTRow[]} */ (failure ? [failure] : [])).concat(kernel.steps.filter((step) => {
      if (isCodegen(step) || step.status === "failed" || step.status === "incomplete") return true;
      if (state.phase && step.phase !== state.phase) return false;
      return !(state.hideUnchanged && step.status === "unchanged");
    }));
  }

  /** The phase menu of the open kernel (left as it is while none is open). @param {PageState} state */
  function renderPhases(state) {
    const kernel = state.current;
    if (!kernel) return;
    const select = /** @type {HTMLSelectElement} */ ($("phase")), all = el("option", "", "all phases");
    all.value = "";
    select.replaceChildren(all);
    for (const phase of phasesOf(kernel)) {
      const option = el("option", "", phase);
      option.value = phase;
      select.appendChild(option);
    }
    select.value = state.phase;
  }

  /** One step's row. @param {PageState} state @param {LTRules} rules @param {LTDetailView} view @param {LTKernel} kernel @param {LTRow} step @param {Map<number|string, number>|undefined} hits */
  function stepRow(state, rules, view, kernel, step, hits) {
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
    row.appendChild(name);
    const phaseText = isCodegen(step) ? step.language : step.phase || "";
    const phase = el("span", "phase", phaseText);
    phase.title = LTText.visible(phaseText);
    const edit = rules.edit[step.edit_status];
    if (edit && edit.badge) phase.appendChild(el("span", `edit-badge ${step.edit_status.toLowerCase()}`, step.edit_status));
    row.appendChild(phase);
    const counts = step.status === "changed" ? LTDiff.stats(view.rowsOf(kernel, step)) : null;
    row.appendChild(el("span", "add", counts ? `+${counts.added}` : ""));
    row.appendChild(el("span", "del", counts ? `−${counts.removed}` : ""));
    row.appendChild(el("span", "ms", msText(step, true)));
    const count = hits && hits.get(step.seq);
    if (count) row.appendChild(el("span", "badge", count));
    return { row, label: String(label), phase: String(phaseText), badged: Boolean(edit && edit.badge) };
  }

  /** The rows of the open kernel. @param {PageState} state @param {LTRules} rules @param {LTDetailView} view */
  function renderRows(state, rules, view) {
    const kernel = state.current;
    const list = $("passes");
    list.replaceChildren();
    if (!kernel) return;
    const shown = visibleSteps(state, kernel);
    // Every row counts, the compile-failure row included, on both sides.
    $("pass-count").textContent = `${shown.length} of ${LTBlocks.stepsOf(kernel).length} steps shown`;
    const hits = state.hits && state.hits.steps.get(kernel.id);
    // The name column is as wide as the longest name (with its indent), so names show whole.
    let widest = 0, deepest = 0, phaseWidest = 0, badged = false;
    const frag = document.createDocumentFragment();
    for (const step of shown) {
      const made = stepRow(state, rules, view, kernel, step, hits);
      widest = Math.max(widest, made.label.length);
      deepest = Math.max(deepest, step.depth || 0);
      phaseWidest = Math.max(phaseWidest, made.phase.length);
      badged = badged || made.badged;
      frag.appendChild(made.row);
    }
    list.style.setProperty("--name-width", `calc(${Math.min(widest, 48)}ch + ${deepest * 14}px + 2px)`);
    // Phases (11px in a 12px row) take what is left, up to their longest; names come first.
    list.style.setProperty("--phase-width", `calc(${Math.min(phaseWidest, 24) * 11 / 12}ch + ${badged ? "7em" : "2px"})`);
    list.appendChild(frag);
  }

  /** The row of the step shown is the active one, scrolled into view. @param {PageState} state */
  function markActive(state) {
    for (const row of $("passes").querySelectorAll(".step.active")) row.classList.remove("active");
    const row = [...$("passes").querySelectorAll(".step")].find((r) => r instanceof HTMLElement && r.dataset.seq === String(state.seq));
    if (row) {
      row.classList.add("active");
      row.scrollIntoView({ block: "nearest" });
    }
  }

  /**
   * The list of one page: it renders itself when the fields it shows are assigned.
   * @param {LTStore} store @param {LTRules} rules @param {LTDetailView} view
   */
  function create(store, rules, view) {
    const { state } = store;
    store.watch(["current"], () => renderPhases(state));
    store.watch(["current", "phase", "hideUnchanged", "hits"], () => renderRows(state, rules, view));
    store.watch(["seq"], () => markActive(state));
    return {
      /** @param {LTKernel} kernel */
      visible: (kernel) => visibleSteps(state, kernel),
      // Nothing of the previous kernel stays clickable while another is inflated.
      loading() {
        $("passes").replaceChildren();
        $("pass-count").textContent = "loading…";
      },
    };
  }

  return { create, phasesOf };
})();
