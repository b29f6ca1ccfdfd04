// @ts-check
// The summary page of lower-trace regress (regress_page.py): the two sides, the count of each
// verdict, and one row per kernel that sorts by any column (click a header; again to reverse) and
// filters by verdict and by name. The rows are regress_page.summary_rows, most severe first.

/**
 * @typedef {Object} LTRegressRow
 * @property {number} n  the row's place in regress.json (most severe first)
 * @property {string} verdict
 * @property {number} severity  0 = the most severe
 * @property {string} tone  "bad" | "warn" | "info" | "ok": the verdict's colour
 * @property {string[]} reasons
 * @property {string} origin
 * @property {string} kernel
 * @property {number} occurrence
 * @property {string} apart  what tells it from kernels of the same origin and name ("" when nothing must)
 * @property {string} signature
 * @property {string[]} evidence
 * @property {LTRegressCause[]} cause  the passes that wrote the differing lines, most lines first
 * @property {number[]|null} registers  [base, head] where they differ
 * @property {number[]|null} spills  [base, head] (stores + loads) where they differ
 * @property {number|null} base_ms
 * @property {number|null} head_ms
 * @property {string|null} base_status
 * @property {string|null} head_status
 * @property {string} href  the comparison page, relative to this page ("": none)
 *
 * @typedef {Object} LTRegressCause
 * @property {string} pass
 * @property {string} text  what it wrote on each side (starts with the pass's name)
 * @property {string} href  its row on the comparison page ("": none)
 *
 * @typedef {Object} LTRegressSide
 * @property {string} label
 * @property {string} folder
 * @property {string} [python]  absent for a stored side (--compare)
 * @property {string} [tilelang]
 * @property {Object<string, unknown>} [configs]
 * @property {number} [exit]
 * @property {string} [summary]  how the side ran, as the terminal says it
 * @property {number} [seconds]
 * @property {string} folder_href
 * @property {string} log_href
 *
 * @typedef {Object} LTRegressData
 * @property {LTRegressSide[]} sides
 * @property {string[]} [notes]  lines about the run as a whole
 * @property {Array<[string, number, string]>} counts  [verdict, kernels, tone], most severe first
 * @property {LTRegressRow[]} rows
 */

function ltRegressPage() {
  const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
  /** @type {LTRegressData} */
  const data = JSON.parse($("regress-data").textContent);

  /** An element with a class and text (or children). */
  const el = (/** @type {string} */ tag, /** @type {string} */ cls = "", /** @type {string|Node[]} */ content = "") => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (typeof content === "string") node.textContent = content;
    else node.append(...content);
    return node;
  };
  const link = (/** @type {string} */ href, /** @type {string} */ text, /** @type {string} */ cls = "") => {
    const a = /** @type {HTMLAnchorElement} */ (el("a", cls, text));
    a.href = href;
    return a;
  };

  // --- the header: how each side ran, or the folder it was read from -----------------------------
  for (const side of data.sides) {
    const line = el("div", "side", [el("b", "", `${side.label}: `)]);
    if (side.summary) {
      line.append(`${side.summary} `);  // what the terminal said of it (regress_view's side line)
    } else if (side.python) {
      const configs = Object.entries(side.configs || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
      line.append(`${side.python} (TileLang ${side.tilelang})${configs ? `, ${configs}` : ""}; exit ${side.exit}, ${Number(side.seconds).toFixed(1)} s `);
    } else {
      line.append(`${side.folder} `);
    }
    if (side.folder_href) line.append(link(side.folder_href, "traces"));
    if (side.log_href) line.append(" · ", link(side.log_href, "log"));
    $("sides").append(line);
  }
  for (const note of data.notes || []) $("sides").append(el("div", "side note", note));  // a side died, variation measured

  // --- the rows ------------------------------------------------------------------------------------
  const ms = (/** @type {number|null} */ value) => (value === null ? "" : value.toFixed(1));
  /** "base → head (±change)", coloured by the change's direction; "" where nothing changed. */
  const delta = (/** @type {number[]|null} */ pair) => {
    if (!pair) return el("span");
    const change = pair[1] - pair[0];
    return el("span", change > 0 ? "delta-up" : change < 0 ? "delta-down" : "", `${pair[0]} → ${pair[1]} (${change > 0 ? "+" : ""}${change})`);
  };
  /** A writer of differing lines: its name (a link to its row on the comparison page), then what it wrote. */
  const why = (/** @type {LTRegressCause} */ cause) => {
    const named = cause.text.startsWith(cause.pass);
    const name = cause.href ? link(cause.href, cause.pass, "cause-pass") : el("b", "cause-pass", cause.pass);
    if (cause.href) name.title = "open this pass on the comparison page";
    return el("li", "", named ? [name, document.createTextNode(cause.text.slice(cause.pass.length))] : cause.text);
  };
  /** @type {Map<HTMLTableRowElement, LTRegressRow>} */
  const rowOf = new Map();
  const body = $("rows");
  body.textContent = "";
  for (const row of data.rows) {
    const tr = /** @type {HTMLTableRowElement} */ (el("tr"));
    tr.dataset.n = String(row.n);
    tr.dataset.verdict = row.verdict;
    const badge = el("span", `verdict tone-${row.tone}`, row.verdict);
    badge.title = row.reasons.join(", ");
    const name = row.href ? link(row.href, row.kernel, "compare-link") : el("span", "name", row.kernel);
    if (row.href) name.title = "open the pass-by-pass comparison";
    const apart = row.apart ? ` [${row.apart}]` : "";  // the signature's part that tells same-named kernels apart
    const again = row.occurrence > 1 ? ` #${row.occurrence}` : "";
    const kernel = el("td", "kernel", [el("span", "origin", row.origin ? `${row.origin} ` : ""), name, el("span", "occurrence", `${again}${apart}`)]);
    kernel.title = row.signature;
    const status = (/** @type {string|null} */ s) => (s === null ? "absent" : s);
    const cells = [
      el("td", "", [badge]),
      kernel,
      el("td", "evidence", [
        ...(row.cause.length ? [el("ul", "cause", row.cause.map(why))] : []),
        ...(row.evidence.length ? [el("ul", "", row.evidence.map((fact) => el("li", "", fact)))] : []),
      ]),
      el("td", "num", [delta(row.registers)]),
      el("td", "num", [delta(row.spills)]),
      el("td", "num", ms(row.base_ms)),
      el("td", "num", ms(row.head_ms)),
    ];
    cells[5].title = `base: ${status(row.base_status)}`;
    cells[6].title = `head: ${status(row.head_status)}`;
    tr.append(...cells);
    rowOf.set(tr, row);
    body.append(tr);
  }
  const rows = [...rowOf.keys()];

  // --- sorting: a header sorts by its column, once more reverses; blanks stay last -----------------
  /** @type {Object<string, (row: LTRegressRow) => number|string|null>} */
  const sortKey = {
    verdict: (r) => r.severity,
    kernel: (r) => `${r.origin}\u0000${r.kernel}`,
    evidence: (r) => r.cause.length + r.evidence.length,
    registers: (r) => (r.registers ? r.registers[1] - r.registers[0] : null),
    spills: (r) => (r.spills ? r.spills[1] - r.spills[0] : null),
    base_ms: (r) => r.base_ms,
    head_ms: (r) => r.head_ms,
  };
  const sorted = { key: "verdict", up: true };
  const headers = /** @type {HTMLElement[]} */ ([...document.querySelectorAll("#kernels-table th[data-key]")]);
  for (const th of headers) th.prepend(el("span", "arrow"));
  const sort = () => {
    const key = sortKey[sorted.key];
    const sign = sorted.up ? 1 : -1;
    const order = rows.slice().sort((a, b) => {
      const ra = rowOf.get(a), rb = rowOf.get(b);
      const va = key(ra), vb = key(rb);
      if (va === null || vb === null) return va === vb ? ra.n - rb.n : va === null ? 1 : -1;
      const by = typeof va === "number" && typeof vb === "number" ? va - vb : String(va).localeCompare(String(vb));
      return by ? sign * by : sorted.key === "kernel" ? sign * (ra.occurrence - rb.occurrence) || ra.n - rb.n : ra.n - rb.n;
    });
    body.append(...order);
    for (const th of headers) {
      const on = th.dataset.key === sorted.key;
      th.setAttribute("aria-sort", on ? (sorted.up ? "ascending" : "descending") : "none");
      /** @type {HTMLElement} */ (th.querySelector(".arrow")).textContent = on ? (sorted.up ? "▲" : "▼") : "";
    }
  };
  for (const th of headers) {
    th.addEventListener("click", () => {
      if (sorted.key === th.dataset.key) sorted.up = !sorted.up;
      else Object.assign(sorted, { key: th.dataset.key, up: true });
      sort();
    });
  }

  // --- filters: the verdicts shown, and a text that the origin or the kernel's name contains -------
  /** @type {Set<string>} */
  const hidden = new Set();
  for (const [verdict, count, tone] of data.counts) {
    const box = /** @type {HTMLInputElement} */ (el("input"));
    box.type = "checkbox";
    box.checked = true;
    box.value = verdict;
    box.addEventListener("change", () => {
      if (box.checked) hidden.delete(verdict);
      else hidden.add(verdict);
      filter();
    });
    const label = el("label", `tone-${tone}`, [box, el("span", "", `${verdict} (${count})`)]);
    label.dataset.verdict = verdict;
    $("verdicts").append(label);
  }
  const text = /** @type {HTMLInputElement} */ ($("filter"));
  const filter = () => {
    const needle = text.value.trim().toLowerCase();
    let shown = 0;
    for (const tr of rows) {
      const row = rowOf.get(tr);
      const match = !hidden.has(row.verdict) && (!needle || `${row.origin} ${row.kernel}`.toLowerCase().includes(needle));
      tr.hidden = !match;
      if (match) shown += 1;
    }
    $("shown").textContent = `${shown} of ${rows.length} kernels shown`;
    $("empty").hidden = shown > 0 || rows.length === 0;
  };
  text.addEventListener("input", filter);

  // --- the theme, shared with the report (state.js keeps it under the same key) --------------------
  const saved = (() => { try { return localStorage.getItem("lt-theme"); } catch { return null; } })();
  if (saved === "light" || saved === "dark") document.documentElement.dataset.theme = saved;
  $("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark"
      : matchMedia("(prefers-color-scheme: dark)").matches;
    document.documentElement.dataset.theme = dark ? "light" : "dark";
    try { localStorage.setItem("lt-theme", dark ? "light" : "dark"); } catch { /* a file: page may have no storage */ }
  });

  if (!rows.length) body.append(el("tr", "", [Object.assign(el("td", "hint", "No kernel was compared."), { colSpan: 7 })]));
  sort();
  filter();
  document.body.dataset.ready = "1";
}

function ltStartRegress() {
  try {
    ltRegressPage();
  } catch (err) {
    document.body.dataset.ready = "error";
    const box = document.createElement("pre");
    box.className = "error";
    box.textContent = `The summary could not be shown: ${err && err.stack ? err.stack : err}`;
    document.body.prepend(box);
    throw err;
  }
}
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ltStartRegress, { once: true });
else ltStartRegress();
