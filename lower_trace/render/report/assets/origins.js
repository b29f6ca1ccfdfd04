// @ts-check
import { LTText } from "./text.js";
import { LTDiff } from "./diff.js";
// The source map on the page: every IR or source line that has an origin carries its place (a
// line of the user's program) as data-o, with one colour per place. Pointing at a line lights its
// place in the source pane and every shown line from the same place; clicking a line of the
// source pane keeps them lit and lists what each pass did to them. An origin inferred from where a
// line sits in a diff (a guess, not a fact of the IR) is drawn in its place's colour, dimmer.
export const LTOrigins = (() => {
  const { el } = LTText;
  const GUESSED = 0.4;  // the opacity of a guessed origin's colour
  const colour = (/** @type {number} */ place, guess = false) => `hsl(${Math.round((place * 137.508) % 360)} 70% 45% / ${guess ? GUESSED : 1})`;
  const base = (/** @type {string} */ path) => path.split(/[\\/]/).pop() || path;
  // How an origin was found (analysis/origins.py): facts, then "guess" ("inherited" in older traces).
  const isGuess = (/** @type {string} */ how) => how === "guess" || how === "inherited";
  /** @type {Object<string, string>} */
  const HOW = {
    operands: "the tile op whose buffers it uses",
    copy: "a copy a pass made of the statement (pipelining, unrolling, a guard per statement)",
    attribute: "the call that put the attribute on the kernel",
    let: "the assignment TileLang inlined into the statement printed here",
    call: "the call of TileLang's own code",
    body: "the loop or branch built around its lowering",
    allocation: "the buffer's allocation",
    error: "the line the error names",
  };

  /** The origin numbers of a text's lines, or null. @param {any} kernel @param {string} digest */
  function linesOf(kernel, digest) {
    const data = kernel && kernel.origins;
    return data && digest && data.lines[digest] ? data.lines[digest] : null;
  }

  function placeText(data, place) {
    const [file, line] = data.places[place];
    return `${base(data.files[file])}:${line}`;
  }

  function label(data, id) {
    const [place, how, library] = data.table[id];
    let text = `from ${placeText(data, place)}`;
    if (library) text += ` (via ${base(library[0])}:${library[1]})`;
    if (isGuess(how)) return `${text}, inferred (from where the line sits in a pass's diff)`;
    return HOW[how] ? `${text}, ${HOW[how]}` : text;
  }

  /** Mark node as line `number` (1-based) of the text `digest`. */
  function mark(node, kernel, digest, number) {
    const lines = linesOf(kernel, digest);
    if (!lines) return;
    const id = lines[number - 1];
    if (id === undefined || id < 0) return;
    const data = kernel.origins;
    const [place, how] = data.table[id];
    const guess = isGuess(how);
    node.dataset.o = String(place);
    node.classList.add("o");
    node.classList.toggle("o-guess", guess);
    node.style.setProperty("--o", colour(place, guess));
    node.title = label(data, id);
  }

  /** A <pre> of the text, a span per line, each marked with its origin. */
  function pre(text, kernel, digest, marked) {
    const box = el("pre", "ir lined");
    const lines = LTDiff.splitLines(text);
    const last = text.endsWith("\n") ? lines.length : lines.length - 1;  // the text exactly, no newline added
    lines.forEach((line, i) => {
      const span = el("span", "ln");
      marked(span, line);
      mark(span, kernel, digest, i + 1);
      box.appendChild(span);
      if (i < last) box.appendChild(document.createTextNode("\n"));
    });
    return box;
  }

  /** Mark a diff table's rows (and rows unfolded later): line numbers name the before/after lines. */
  function markDiff(box, kernel, before, after) {
    if (!linesOf(kernel, before) && !linesOf(kernel, after)) return;
    const apply = () => {
      for (const tr of /** @type {NodeListOf<HTMLTableRowElement>} */ (box.querySelectorAll("tr.req, tr.rch, .diff-side tr"))) {
        if (tr.dataset.o !== undefined || tr.classList.contains("fold")) continue;
        const side = tr.closest(".diff-side");
        const cells = tr.cells;
        if (side) {
          const no = Number(cells[0].textContent);
          if (no) mark(tr, kernel, side.classList.contains("old") ? before : after, no);
        } else {
          const oldNo = Number(cells[0].textContent), newNo = Number(cells[1].textContent);
          if (newNo) mark(tr, kernel, after, newNo);
          else if (oldNo) mark(tr, kernel, before, oldNo);
        }
      }
    };
    apply();
    box.addEventListener("click", (event) => {
      if (event.target instanceof Element && event.target.closest("tr.fold")) setTimeout(apply, 0);
    });
  }

  /**
   * The pane with the user's source. failing: the digest of a failed pass's input and its error
   * message: the places of the lines the message quotes are marked as failing.
   * @param {any} kernel
   * @param {(seq: number) => void} select  open a pass
   * @param {{digest: string, message: string}|null} [failing]
   */
  function sourcePane(kernel, select, failing) {
    const data = kernel && kernel.origins;
    if (!data) return kernel && kernel.originsMissing ? missing() : null;
    const box = el("section", "source-pane");
    const bar = box.appendChild(el("div", "toolbar"));
    bar.appendChild(el("span", "label", "your source: point at any line of the IR or the source to see where it comes from (dimmer: inferred); click a line here to keep its lines lit"));
    keepClear(box);
    const failed = failingPlaces(kernel, failing);
    const byPlace = new Map(data.places.map(([file, line], place) => [`${file}:${line}`, place]));
    const events = box.appendChild(el("div", "line-history"));
    for (const [fileNo, file] of data.files.entries()) {
      const shown = data.sources[file];
      box.appendChild(el("div", "source-file", file));
      if (!shown) {
        box.appendChild(el("p", "hint", "(this file was not readable when the kernel was traced)"));
        continue;
      }
      const code = box.appendChild(el("pre", "source lined"));
      shown.lines.forEach((text, i) => {
        const number = shown.first + i;
        const span = el("span", "ln");
        span.appendChild(el("span", "src-no", String(number).padStart(4) + "  "));
        LTText.appendText(span, text);
        const key = `${fileNo}:${number}`;
        const place = byPlace.get(key);
        if (place !== undefined) {
          span.dataset.o = String(place);
          span.classList.add("o");
          span.style.setProperty("--o", colour(place));
          span.addEventListener("click", () => pin(place, data, events, select));
        }
        if (failed.has(key)) {
          span.classList.add("o-failing");
          span.title = "the failed pass's error points at this line";
        }
        code.appendChild(span);
        code.appendChild(document.createTextNode("\n"));
      });
    }
    return box;
  }

  // A kernel with spans whose source map is not in the file: the run was killed before it closed,
  // or its end left the map out to finish in time.
  function missing() {
    const run = location.protocol === "file:" ? decodeURIComponent(location.pathname).replace(/\/[^/]*$/, "") : "RUN";
    const note = el("p", "hint source-map-missing", "source map: run ");
    note.appendChild(el("code", "", `lower-trace report ${run}`));
    note.appendChild(document.createTextNode(" to add it"));
    return note;
  }

  // What is scrolled into view in the pane's scroller (a header, a pinned line, "see the picture
  // below") lands below the sticky pane, however tall a pinned line's history makes it.
  /** @param {HTMLElement} box */
  function keepClear(box) {
    if (typeof ResizeObserver === "undefined") return;
    const watch = new ResizeObserver(() => {
      if (!box.isConnected) { watch.disconnect(); return; } // the pane was replaced
      box.parentElement.style.scrollPaddingTop = `${box.offsetHeight + 12}px`;
    });
    watch.observe(box);
  }

  /**
   * The user's lines (as "file number:line") a failure points at: the locations TVM's diagnostics
   * print ("--> file:line:column"), and the origins of the failing IR's lines its message quotes
   * (analysis/origins.py's error_points_at, the terminal's view of the same).
   */
  function failingPlaces(kernel, failing) {
    const found = new Set();
    if (!failing || !failing.message) return found;
    const data = kernel.origins;
    for (const match of failing.message.matchAll(/-->\s+(\S+?):(\d+):\d+/g)) {
      const fileNo = data.files.indexOf(match[1]);
      if (fileNo >= 0) found.add(`${fileNo}:${match[2]}`);
    }
    const lines = linesOf(kernel, failing.digest);
    if (!lines) return found;
    LTDiff.splitLines(kernel.snap(failing.digest)).forEach((line, i) => {
      const text = line.trim();
      if (text.length >= 8 && failing.message.includes(text) && lines[i] >= 0) {
        const [fileNo, number] = data.places[data.table[lines[i]][0]];
        found.add(`${fileNo}:${number}`);
      }
    });
    return found;
  }

  let pinned = -1;
  function pin(place, data, events, select) {
    pinned = pinned === place ? -1 : place;
    light(pinned, "o-pin");
    events.replaceChildren();
    if (pinned < 0) return;
    events.appendChild(el("h3", "", `what happened to ${placeText(data, place)}`));
    const list = events.appendChild(el("ol", "line-events"));
    const history = data.history[String(place)] || [];
    if (!history.length) list.appendChild(el("li", "hint", "no pass changed its lines"));
    for (const [seq, what, before, after] of history) {
      const item = list.appendChild(el("li", `event ${what}`));
      const link = item.appendChild(el("button", "pass-link", `#${seq}`));
      link.type = "button";
      link.addEventListener("click", () => select(seq));
      item.appendChild(document.createTextNode(` ${what}: ${before} → ${after} line${after === 1 ? "" : "s"}`));
    }
    const first = document.querySelector(`#detail [data-o="${place}"]:not(.source-pane *)`);
    if (first) first.scrollIntoView({ block: "center" }); // not under the sticky source pane
  }

  /** Give cls to every marked element of place (none: -1), taking it from the others. */
  function light(place, cls) {
    for (const node of document.querySelectorAll(`.${cls}`)) node.classList.remove(cls);
    if (place < 0) return;
    for (const node of document.querySelectorAll(`[data-o="${place}"]`)) node.classList.add(cls);
  }

  // One listener for the page: whatever is shown, pointing lights its place.
  document.addEventListener("mouseover", (event) => {
    const target = event.target instanceof Element ? event.target.closest("[data-o]") : null;
    light(target instanceof HTMLElement ? Number(target.dataset.o) : -1, "o-hl");
    if (target instanceof HTMLElement && !target.closest(".source-pane")) showInPane(target.dataset.o || "");
  });

  /** Scroll the source pane (only the pane, not the page) to the user's line just lit. */
  function showInPane(place) {
    const line = /** @type {HTMLElement|null} */ (document.querySelector(`.source-pane [data-o="${place}"]`));
    const box = line && /** @type {HTMLElement|null} */ (line.closest("pre"));
    if (!line || !box) return;
    const top = line.offsetTop - box.offsetTop;
    if (top < box.scrollTop || top + line.offsetHeight > box.scrollTop + box.clientHeight) box.scrollTop = top - box.clientHeight / 2;
  }

  return { mark, pre, markDiff, sourcePane, linesOf, isGuess, colour };
})();
