// @ts-check
// The comparison page's "why the code differs" (regress's cause, render/regress_cause_view.py's
// page_data): each pass that wrote differing lines of the final code, and each such line on each
// side as a link to the aligned row of the pass that wrote it there (#N, which the page opens).
// Python worked out every line and row; this only lists them.

/**
 * @typedef {Object} LTCauseLine
 * @property {string} where  "device source", "host source" or "TIR"
 * @property {number} line  1-based, in the text the page shows
 * @property {string} text
 * @property {string|null} pass  "seq name" of the pass that wrote it (null: codegen or the frontend)
 * @property {number|null} row  that pass's aligned row
 *
 * @typedef {Object} LTCauseSide
 * @property {LTCauseLine[]} lines
 * @property {number} more  lines left out
 * @property {Array<[string, number|null]>} rows  the runs that wrote them: "seq name", aligned row
 *
 * @typedef {Object} LTCausePass
 * @property {string} pass
 * @property {string} text
 * @property {LTCauseSide} base
 * @property {LTCauseSide} head
 *
 * @typedef {Object} LTCause
 * @property {number} base_lines
 * @property {number} head_lines
 * @property {string[]} where
 * @property {LTCausePass[]} passes
 */

function ltCausePanel() {
  const data = document.getElementById("run-data");
  /** @type {LTCause|null} */
  const cause = data ? (JSON.parse(data.textContent || "{}").cause || null) : null;
  const main = document.getElementById("compare");
  if (!cause || !main) return;
  const el = (/** @type {string} */ tag, /** @type {string} */ cls = "", /** @type {string|Node[]} */ content = "") => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (typeof content === "string") node.textContent = content;
    else node.append(...content);
    return node;
  };
  /** A link that opens an aligned row (the page follows #N); plain text where there is none. */
  const opener = (/** @type {number|null} */ row, /** @type {string} */ cls, /** @type {Node[]} */ content, /** @type {string} */ title) => {
    if (row === null) return el("span", cls, content);
    const a = /** @type {HTMLAnchorElement} */ (el("a", cls, content));
    a.href = `#${row}`;
    a.dataset.row = String(row);
    a.title = title;
    return a;
  };
  const side = (/** @type {string} */ label, /** @type {LTCauseSide} */ found) => {
    const box = el("div", "cause-side", [el("h4", "", `${label}: ${found.lines.length + found.more} line${found.lines.length + found.more === 1 ? "" : "s"}`)]);
    if (found.rows.length) {
      box.append(el("div", "cause-runs", [
        document.createTextNode("written by "),
        ...found.rows.map(([name, row]) => opener(row, "cause-run", [document.createTextNode(name)], `open ${name} on ${label}`)),
      ]));
    }
    const list = el("ol", "cause-lines");
    for (const line of found.lines) {
      const item = opener(line.row, "cause-line", [
        el("span", "cause-where", `${line.where} ${line.line}`),
        el("code", "", line.text.trim()),
        el("span", "cause-by", line.pass ? `← ${line.pass}` : ""),
      ], line.pass ? `open ${line.pass}: the pass that wrote this line on ${label}` : "");
      list.append(el("li", "", [item]));
    }
    box.append(list);
    if (found.more) box.append(el("div", "muted", `… ${found.more} more`));
    return box;
  };
  const panel = el("section", "cause-panel", [
    el("h2", "", "Why the code differs"),
    el("div", "muted", `${cause.base_lines} differing lines on base, ${cause.head_lines} on head (${cause.where.join(", ")}), each with the pass that wrote it: click one to open that pass`),
  ]);
  panel.id = "cause";
  cause.passes.forEach((found, index) => {
    const details = /** @type {HTMLDetailsElement} */ (el("details", "cause-pass", [el("summary", "", found.text)]));
    details.open = index === 0;
    details.append(el("div", "cause-sides", [side("base", found.base), side("head", found.head)]));
    panel.append(details);
  });
  main.before(panel);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ltCausePanel, { once: true });
else ltCausePanel();
