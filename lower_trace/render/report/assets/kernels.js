// @ts-check
import { LTText } from "./text.js";
/** @import { LTDeviceIndex, LTKernelSummary, LTRules } from "./payload.js" */
// The kernel index: one row per kernel, built once; filtering by name (substring or regex) and
// by status only toggles rows, so a 1,000-kernel run stays quick.
export const LTIndex = (() => {
  const { el, plural } = LTText;

  // The statuses the status filter knows a kernel by.
  /** @param {LTKernelSummary} kernel @param {LTRules} rules */
  function statusKeys(kernel, rules) {
    const keys = new Set();
    if (kernel.status === "running") keys.add("running");
    else if (kernel.status === "failed" || kernel.failed) keys.add("failed");
    else keys.add("ok");
    if ((kernel.edits || []).some((s) => rules.edit[s] && rules.edit[s].badge)) keys.add("edited");
    return keys;
  }

  // Registers, spills, shared memory, occupancy: which variants of a sweep spill is one glance.
  /** @param {LTDeviceIndex} device */
  function deviceCells(device) {
    const cells = el("span", "device-cells");
    const spills = device.spill_stores + device.spill_loads;
    cells.appendChild(el("span", "regs", `${device.registers} regs`));
    cells.appendChild(el("span", spills ? "spills spilling" : "spills", spills ? `spills ${device.spill_stores}/${device.spill_loads} B` : "no spills"));
    cells.appendChild(el("span", "muted smem", `${device.shared} B smem`));
    cells.appendChild(el("span", "muted occupancy", device.warps === null ? "occupancy ?" : `${device.warps} warps/SM`));
    cells.title = device.occupancy;
    return cells;
  }

  /** @param {LTKernelSummary} kernel @param {LTRules} rules */
  function buildRow(kernel, rules) {
    const row = el("button", `kernel-row ${kernel.status}`);
    row.type = "button";
    row.dataset.kernel = kernel.id;
    row.appendChild(el("span", `dot ${kernel.failed || kernel.status === "failed" ? "failed" : kernel.status === "running" ? "incomplete" : "changed"}`));
    const cell = el("span", "kcell");
    cell.appendChild(el("span", "kname", kernel.name));
    // Which variant (its working copy, as `lower-trace edits` lists it): a sweep's kernels share one name.
    if (kernel.variant) cell.appendChild(el("span", "muted variant", kernel.variant));
    row.appendChild(cell);
    row.title = LTText.visible([kernel.id, kernel.name, kernel.variant].filter(Boolean).join(" · "));
    // Where the user's program compiled it (its frames, outermost first), as tlparse shows a compile's stack.
    const stack = kernel.stack || [];
    if (stack.length) {
      const [file, line, fn] = stack[stack.length - 1];
      cell.appendChild(el("span", "muted call-site", `${file.split(/[\\/]/).pop()}:${line} ${fn}`));
      row.title += LTText.visible("\ncompiled from:\n" + stack.map(([f, l, n]) => `  ${f}:${l} in ${n}`).join("\n"));
    }
    row.appendChild(el("span", "muted target", kernel.target || "?"));
    const counts = el("span", "counts");
    counts.appendChild(el("span", "", plural(kernel.passes, "pass", "passes")));
    counts.appendChild(el("span", "changed-count", `${kernel.changed} changed`));
    if (kernel.failed) counts.appendChild(el("span", "failed-count", `${kernel.failed} failed`));
    if (kernel.status === "running") counts.appendChild(el("span", "failed-count", rules.state.DID_NOT_FINISH));
    else if (kernel.status === "failed" && !kernel.failed) counts.appendChild(el("span", "failed-count", rules.state.COMPILE_FAILED));
    for (const status of kernel.edits || []) {
      if (rules.edit[status] && rules.edit[status].badge) counts.appendChild(el("span", `edit-badge ${status.toLowerCase()}`, status));
    }
    row.appendChild(counts);
    row.appendChild(el("span", "muted ms", `${Math.round(kernel.ms)} ms`));
    if (kernel.device) row.appendChild(deviceCells(kernel.device));
    const badge = el("span", "badge");
    badge.hidden = true;
    row.appendChild(badge);
    return { row, badge };
  }

  // list: the container; onSelect(id) when a row is clicked; countNode shows "N of M kernels".
  /**
   * @param {HTMLElement} list
   * @param {HTMLElement} countNode
   * @param {LTKernelSummary[]} kernels
   * @param {LTRules} rules
   * @param {(id: string) => void} onSelect
   */
  function create(list, countNode, kernels, rules, onSelect) {
    const entries = new Map();
    const frag = document.createDocumentFragment();
    for (const kernel of kernels) {
      const { row, badge } = buildRow(kernel, rules);
      entries.set(kernel.id, { kernel, row, badge, keys: statusKeys(kernel, rules), lower: [kernel.id, kernel.name, kernel.variant || ""].join(" ").toLowerCase() });
      frag.appendChild(row);
    }
    list.replaceChildren(frag);
    list.addEventListener("click", (event) => {
      const row = LTText.closest(event, ".kernel-row");
      if (row && list.contains(row)) onSelect(row.dataset.kernel);
    });
    let active = null;
    let shown = kernels.length;

    function showCount(filtered) {
      countNode.textContent = filtered ? `${shown} of ${plural(kernels.length, "kernel")}` : plural(kernels.length, "kernel");
      countNode.dataset.shown = String(shown);
    }

    // query: a substring of the name (any case) or a regex; status: "", ok, failed, running, edited.
    function filter(query, status) {
      const text = query.trim();
      const lower = text.toLowerCase();
      let regex = null;
      if (text) {
        try { regex = new RegExp(text, "i"); } catch { regex = null; }
      }
      shown = 0;
      for (const entry of entries.values()) {
        const byName = !text || entry.lower.includes(lower) || (regex !== null && (regex.test(entry.kernel.name) || regex.test(entry.kernel.variant || "") || regex.test(entry.kernel.id)));
        const visible = byName && (!status || entry.keys.has(status));
        if (entry.row.hidden === visible) entry.row.hidden = !visible;
        if (visible) shown++;
      }
      showCount(Boolean(text || status));
      return shown;
    }

    function setActive(id) {
      if (active) active.row.classList.remove("active");
      active = entries.get(id) || null;
      if (active) {
        active.row.classList.add("active");
        if (!active.row.hidden) active.row.scrollIntoView({ block: "nearest" });
      }
    }

    // hits: Map id -> matching steps, or null to clear.
    function setHits(hits) {
      for (const [id, entry] of entries) {
        const count = hits ? hits.get(id) : 0;
        if (count) {
          entry.badge.textContent = plural(count, "pass", "passes");
          entry.badge.hidden = false;
        } else if (!entry.badge.hidden) {
          entry.badge.hidden = true;
        }
      }
    }

    showCount(false);
    return { filter, setActive, setHits };
  }

  return { create };
})();
