// @ts-check
/** @import { LTRules } from "./payload.js" */
// Text from the compiler or the user only ever enters the page through these helpers:
// DOM text nodes (never innerHTML), with control and bidi characters shown, not obeyed.
export const LTText = (() => {
  // The unsafe set is the terminal's (lower_trace/render/terminal.py), injected by Python into the page data.
  // Matched by code point ("u"): a character above U+FFFF (a tag character) is one match, a pair is no surrogate.
  /** @type {LTRules} */
  const rules = JSON.parse(document.getElementById("run-data").textContent).rules;
  const UNSAFE = new RegExp(rules.unsafe, "u");
  const UNSAFE_G = new RegExp(rules.unsafe, "gu");
  const mark = (ch) => "⟨U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "⟩";

  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {string} [cls]
   * @param {unknown} [text]
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) appendText(node, String(text));
    return node;
  }

  // Append text to node; unsafe characters become visible ⟨U+XXXX⟩ marks.
  /**
   * @template {Node} N
   * @param {N} node
   * @param {string} text
   * @returns {N}
   */
  function appendText(node, text) {
    if (!UNSAFE.test(text)) { node.appendChild(document.createTextNode(text)); return node; }
    let last = 0;
    text.replace(UNSAFE_G, (ch, at) => {
      if (at > last) node.appendChild(document.createTextNode(text.slice(last, at)));
      const shown = document.createElement("span");
      shown.className = "ctl";
      shown.title = "control character shown, not applied";
      shown.textContent = mark(ch);
      node.appendChild(shown);
      last = at + ch.length;
      return ch;
    });
    if (last < text.length) node.appendChild(document.createTextNode(text.slice(last)));
    return node;
  }

  // The text as a string with unsafe characters as visible marks: for SVG text, which takes no spans.
  const visible = (/** @type {unknown} */ text) => String(text).replace(UNSAFE_G, mark);

  // An SVG element (the timing charts, the layout grids); text goes in as visible text, never markup.
  const SVG_NS = "http://www.w3.org/2000/svg"; // a namespace name, not an address: nothing is fetched
  /**
   * @param {string} tag
   * @param {Object<string, unknown>} [attrs]
   * @param {unknown} [text]
   * @returns {SVGElement}
   */
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined && text !== null) node.textContent = visible(text);
    return node;
  }

  // Append text where parts are marked: ranges is [[from, to, className], ...] (may overlap).
  /**
   * @template {Node} N
   * @param {N} node
   * @param {string} text
   * @param {Array<[number, number, string]>} ranges
   * @returns {N}
   */
  function appendMarked(node, text, ranges) {
    if (!ranges.length) return appendText(node, text);
    const cuts = new Set([0, text.length]);
    for (const [from, to] of ranges) { cuts.add(Math.max(0, from)); cuts.add(Math.min(text.length, to)); }
    const points = [...cuts].sort((x, y) => x - y);
    for (let i = 0; i + 1 < points.length; i++) {
      const from = points[i], to = points[i + 1];
      if (from >= to) continue;
      const classes = ranges.filter(([a, b]) => a <= from && to <= b).map((r) => r[2]);
      const piece = text.slice(from, to);
      if (classes.length) appendText(node.appendChild(el("span", [...new Set(classes)].join(" "))), piece);
      else appendText(node, piece);
    }
    return node;
  }

  // [from, to, "hit"] ranges of a global regex in text.
  /**
   * @param {RegExp|null} regex
   * @param {string} text
   * @returns {Array<[number, number, string]>}
   */
  function matchRanges(regex, text) {
    if (!regex) return [];
    /** @type {Array<[number, number, string]>} */
    const ranges = [];
    regex.lastIndex = 0;
    let m;
    while ((m = regex.exec(text)) !== null) {
      if (m[0].length === 0) { regex.lastIndex++; continue; }
      ranges.push([m.index, m.index + m[0].length, "hit"]);
      if (ranges.length > 1000) break;
    }
    return ranges;
  }

  /**
   * @param {RegExp|null} regex
   * @param {string} text
   */
  function countMatches(regex, text) {
    if (!regex || !text) return 0;
    regex.lastIndex = 0;
    let count = 0, m;
    while ((m = regex.exec(text)) !== null) {
      if (m[0].length === 0) regex.lastIndex++; else count++;
    }
    return count;
  }

  // The element an event happened in, or the nearest one above it, that matches selector (null: none).
  /** @type {(event: Event, selector: string) => HTMLElement|SVGElement|null} */
  const closest = (event, selector) => (event.target instanceof Element ? event.target.closest(selector) : null);

  // "1 kernel", "2 kernels", "1 pass", "3 passes": as text_safety.py's plural.
  /** @type {(n: number, one: string, many?: string) => string} */
  const plural = (n, one, many) => `${n} ${n === 1 ? one : many || one + "s"}`;

  return { el, svg, appendText, appendMarked, matchRanges, countMatches, visible, plural, closest, rules, UNSAFE };
})();
