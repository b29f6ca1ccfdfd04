"use strict";
// The comparison page (lower-trace diff --html): the comparison Python wrote, shown with the
// view the run report uses for "compare with…". #N opens aligned row N, #source the sources.
async function ltComparePage() {
  const $ = (id) => document.getElementById(id);
  const header = JSON.parse($("run-data").textContent);
  const state = {
    regex: null, blame: false,
    mode: localStorage.getItem("lt-mode") === "unified" ? "unified" : "split",
    cmpHideSame: localStorage.getItem("lt-cmp-hide-same") === "1",
  };
  const view = LTView.create(state, header.rules);
  const cmp = LTCompare.fromData(await LTBlocks.payload(0));
  const modeLabel = () => (state.mode === "split" ? "diff: side by side" : "diff: unified");
  $("runinfo").textContent = `A = ${cmp.a.name} (${cmp.a.passes} passes) · B = ${cmp.b.name} (${cmp.b.passes} passes)`;
  $("mode").textContent = modeLabel();
  const savedTheme = localStorage.getItem("lt-theme");
  if (savedTheme) document.documentElement.dataset.theme = savedTheme;

  let shown = null;
  const open = (at) => {
    shown = LTCompareView.create($("compare"), cmp, view, header.labels, state);
    shown.start(at);
  };
  state.onSelect = (at) => {
    localStorage.setItem("lt-cmp-hide-same", state.cmpHideSame ? "1" : "0");
    const hash = `#${at}`;
    if (location.hash !== hash) history.replaceState(null, "", hash);
  };
  const fromHash = () => {
    const at = decodeURIComponent(location.hash.slice(1));
    return at === "source" ? "source" : /^\d+$/.test(at) ? Number(at) : undefined;
  };

  $("mode").addEventListener("click", () => {
    state.mode = state.mode === "split" ? "unified" : "split";
    localStorage.setItem("lt-mode", state.mode);
    $("mode").textContent = modeLabel();
    open(shown.current());
  });
  $("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    document.documentElement.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("lt-theme", document.documentElement.dataset.theme);
  });
  document.addEventListener("keydown", (event) => {
    const node = document.activeElement;
    if ((node && (node.tagName === "INPUT" && node.type !== "checkbox")) || event.ctrlKey || event.metaKey || event.altKey) return;
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
