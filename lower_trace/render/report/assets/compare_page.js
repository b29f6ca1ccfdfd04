// @ts-check
import { LTState } from "./state.js";
import { LTBlocks } from "./blocks.js";
import { LTView } from "./view.js";
import { LTCompare } from "./compare.js";
import { LTCompareView } from "./compare_view.js";
/** @import { LTCompareHeader, LTComparisonData } from "./payload.js" */
// The comparison page (lower-trace diff --html): the comparison Python wrote, shown with the
// view the run report uses for "compare with…". #N opens aligned row N, #source the sources.
async function ltComparePage() {
  const $ = (id) => document.getElementById(id);
  /** @type {LTCompareHeader} */
  const header = JSON.parse($("run-data").textContent);
  const { state, subscribe } = LTState.create(["mode", "cmpHideSame", "theme"]);
  const view = LTView.create(state, header.rules);
  const cmp = LTCompare.fromData(/** @type {LTComparisonData} */ (/** @type {unknown} */ (await LTBlocks.payload(0)))); // its one block
  const modeLabel = () => (state.mode === "split" ? "diff: side by side" : "diff: unified");
  $("runinfo").textContent = `A = ${cmp.a.name} (${cmp.a.passes} passes) · B = ${cmp.b.name} (${cmp.b.passes} passes)`;
  $("mode").textContent = modeLabel();
  if (state.theme) document.documentElement.dataset.theme = state.theme;

  let shown = null;
  const open = (at) => {
    shown = LTCompareView.create($("compare"), cmp, view, header.labels, state);
    shown.start(at);
  };
  subscribe("cmpRow", (at) => {
    const hash = `#${at}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
  });
  const fromHash = () => {
    const at = decodeURIComponent(location.hash.slice(1));
    return at === "source" ? "source" : /^\d+$/.test(at) ? Number(at) : undefined;
  };

  $("mode").addEventListener("click", () => {
    state.mode = state.mode === "split" ? "unified" : "split";
    $("mode").textContent = modeLabel();
    open(shown.current());
  });
  $("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    state.theme = dark ? "light" : "dark";
    document.documentElement.dataset.theme = state.theme;
  });
  document.addEventListener("keydown", (event) => {
    const node = document.activeElement;
    if ((node instanceof HTMLInputElement && node.type !== "checkbox") || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "j") shown.move(1, false);
    else if (event.key === "k") shown.move(-1, false);
    else if (event.key === "n") shown.move(1, true);
  });
  window.addEventListener("hashchange", () => { const at = fromHash(); if (at !== undefined && at !== shown.current()) shown.select(at); });
  open(fromHash());
  document.body.dataset.ready = "1";
}

function ltStartCompare() {
  ltComparePage().catch((err) => {
    document.body.dataset.ready = "error";
    const box = document.createElement("pre");
    box.className = "error";
    box.textContent = `The comparison could not be shown: ${err && err.stack ? err.stack : err}`;
    document.body.prepend(box);
    throw err;
  });
}
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ltStartCompare, { once: true });
else ltStartCompare();
