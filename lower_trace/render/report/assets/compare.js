// @ts-check
import { LTDiff } from "./diff.js";
/** @import { LTComparedKernel, LTComparisonData, LTKernel, LTStep } from "./payload.js" */
/**
 * Two compiles compared, as the comparison view shows them (LTCompare.compare; fromData: Python's).
 * @typedef {Object} LTComparison
 * @property {string} configs  the pass configs the two differ in, as text ("" when none)
 * @property {LTComparedKernel} a
 * @property {LTComparedKernel} b
 * @property {LTAlignedRow[]} rows
 * @property {{kind: string, row: number, a: LTStep|null, b: LTStep|null}|null} divergence  the first
 * @property {boolean} sameSource
 * @property {boolean} identical
 * @property {boolean} equivalent  the same once B's names are written as A's
 * @property {string} renamed  which names were, as text
 * @property {(side: number, digest: string) => string} text  a snapshot as compared
 * @property {Array<[string, string|null, string|null]>} sources  role, A's source text, B's
 */
/**
 * @typedef {Object} LTAlignedRow
 * @property {LTStep|null} a
 * @property {LTStep|null} b
 * @property {boolean|null} sameInput
 * @property {boolean|null} sameOutput
 */
// Two compiles compared pass by pass in the page: the same alignment and first divergence as
// lower_trace/analysis/compare.py (a test holds the two to the same answer on real kernels).
// A comparison is {a, b, rows, divergence, sameSource, sources, text}: rows pair a pass of A
// with one of B (or stand alone), text(side, digest) is a snapshot as compared.
export const LTCompare = (() => {
  const shortName = (name) => String(name).split(".").pop();
  const keyOf = (step) => `${shortName(step.name)}\u0000${step.depth || 0}`;

  // The two pass lists aligned by name (without namespace) and depth: a minimal alignment (Myers).
  function align(a, b) {
    const rows = [];
    let i = 0, j = 0;
    const pairs = LTDiff.myers(a.map(keyOf), b.map(keyOf)).filter(([op]) => op === "=");
    for (const [, pa, pb] of [...pairs, ["=", a.length, b.length]]) {
      while (i < pa) rows.push([a[i++], null]);
      while (j < pb) rows.push([null, b[j++]]);
      if (pa < a.length) rows.push([a[pa], b[pb]]);
      i = pa + 1;
      j = pb + 1;
    }
    return rows;
  }

  // Names derived from the second kernel's name written as the first's -- whole identifiers only,
  // never a namespace's (T.gemm, tl::gemm_ss) -- as analysis/renaming.py does (kernel_renames, rename).
  const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;
  // The identifiers used on their own (T.gemm is not a use of gemm; Module.gemm_kernel is).
  function vocabulary(texts) {
    const found = new Set();
    for (const text of texts) {
      for (const m of text.matchAll(IDENT)) {
        const q = qualifier(text, m.index);
        if (q === null || q === "Module") found.add(m[0]);
      }
    }
    return found;
  }
  function kernelRenames(nameA, nameB, vocabA, vocabB) {
    const renames = new Map();
    if (!nameA || !nameB || nameA === nameB) return renames;
    for (const word of vocabB) {
      for (let at = word.indexOf(nameB); at >= 0; at = word.indexOf(nameB, at + 1)) {
        const before = word.slice(0, at), after = word.slice(at + nameB.length);
        if ((!before || before.endsWith("_")) && (!after || after.startsWith("_"))) {
          const theirs = before + nameA + after;
          if (vocabA.has(theirs) && !vocabA.has(word)) renames.set(word, theirs);
          break;
        }
      }
    }
    return renames;
  }
  function qualifier(text, start) {
    let end;
    if (start >= 1 && text[start - 1] === "/") return ""; // a part of a path: tl_templates/cuda/reduce.h
    if (start >= 1 && text[start - 1] === ".") end = start - 1;
    else if (start >= 2 && text.slice(start - 2, start) === "::") end = start - 2;
    else return null;
    let begin = end;
    while (begin > 0 && /[A-Za-z0-9_]/.test(text[begin - 1])) begin--;
    return text.slice(begin, end);
  }
  function rename(text, renames) {
    if (!renames.size) return text;
    return text.replace(IDENT, (word, start) => {
      const now = renames.get(word);
      if (now === undefined) return word;
      const q = qualifier(text, start);
      return q === null || q === "Module" ? now : word;
    });
  }
  // A printed module with its functions in name order (renaming.py's sorted_functions): TVM prints
  // them in its function map's order, which follows the names' hashes.
  function sortedFunctions(text) {
    const mark = "\nclass Module:\n";
    const at = text.indexOf(mark);
    if (at < 0) return text;
    const head = text.slice(0, at + mark.length), body = text.slice(at + mark.length);
    const starts = [...body.matchAll(/^ {4}(?=\S)/gm)].map((m) => m.index);
    if (!starts.length || body.slice(0, starts[0]).trim()) return text;
    const members = [];
    for (let i = 0; i < starts.length;) {
      let j = i;
      while (j < starts.length && body.slice(starts[j], starts[j] + 5) === "    @") j++;
      const end = j + 1 < starts.length ? starts[j + 1] : body.length;
      const chunk = body.slice(starts[i], end);
      const found = /^ {4}def ([A-Za-z_][A-Za-z0-9_]*)/m.exec(chunk);
      members.push([found ? found[1] : "", chunk]);
      i = j + 1;
    }
    if (members.length < 2) return text;
    members.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    const trimmed = body.replace(/\n+$/, "");
    return head + body.slice(0, starts[0]) + members.map(([, c]) => c.replace(/\n+$/, "")).join("\n\n") + body.slice(trimmed.length);
  }
  function normaliser(renames, reorder) {
    const cache = [new Map(), new Map()];
    return (side, text) => {
      if (!reorder) return text;
      let found = cache[side].get(text);
      if (found === undefined) {
        found = sortedFunctions(side === 1 ? rename(text, renames) : text);
        if (cache[side].size > 2000) cache[side].clear();
        cache[side].set(text, found);
      }
      return found;
    };
  }
  // Every text a kernel's comparison reads (compare.py's digests).
  const digestsOf = (kernel) => [...new Set(kernel.steps.flatMap((s) => (s.kind === "pass" ? [s.before, s.after] : [s.tir, s.generated || s.source])).filter(Boolean))];

  const passesOf = (kernel) => kernel.steps.filter((s) => s.kind === "pass");
  const sourcesOf = (kernel) => kernel.steps.filter((s) => s.kind === "codegen")
    .sort((x, y) => Number(x.role !== "device") - Number(y.role !== "device") || x.seq - y.seq);

  // kernelA / kernelB: opened kernels of the report (steps, name, snap).
  /** @param {LTKernel} kernelA @param {LTKernel} kernelB @returns {LTComparison} */
  function compare(kernelA, kernelB) {
    const renames = kernelA.name === kernelB.name ? new Map()
      : kernelRenames(kernelA.name, kernelB.name, vocabulary(digestsOf(kernelA).map(kernelA.snap)), vocabulary(digestsOf(kernelB).map(kernelB.snap)));
    const norm = normaliser(renames, kernelA.name !== kernelB.name);
    const text = (side, digest) => (digest ? norm(side, (side === 0 ? kernelA : kernelB).snap(digest)) : "");
    const rows = [];
    let divergence = null, lastOneSided = null;
    for (const [a, b] of align(passesOf(kernelA), passesOf(kernelB))) {
      if (!a || !b) {
        rows.push({ a, b, sameInput: null, sameOutput: null });
        if ((a || b).status !== "unchanged") lastOneSided = { row: rows.length - 1, a, b };
        continue;
      }
      const sameInput = text(0, a.before) === text(1, b.before);
      let sameOutput;
      if (a.status === "unchanged" && b.status === "unchanged") sameOutput = sameInput;
      else if (a.status !== b.status && (a.status === "failed" || b.status === "failed")) sameOutput = false;
      else sameOutput = text(0, a.after) === text(1, b.after);
      rows.push({ a, b, sameInput, sameOutput });
      if (divergence) continue;
      if (sameInput && !sameOutput) divergence = { kind: "behaves differently", row: rows.length - 1, a, b };
      else if (!sameInput) divergence = lastOneSided ? { kind: "one-sided", ...lastOneSided } : { kind: "input", row: -1, a: null, b: null };
    }
    if (divergence && divergence.kind === "behaves differently") divergence = innermost(rows, divergence.row);
    const sources = pairSources(sourcesOf(kernelA), sourcesOf(kernelB), (step) => step.generated || step.source);
    const compiled = (list, side) => list.map((s) => `${s.role}\u0000${text(side, s.generated || s.source)}`).join("\u0001");
    const sameSource = compiled(sourcesOf(kernelA), 0) === compiled(sourcesOf(kernelB), 1);
    if (!divergence && !sameSource && lastOneSided) divergence = { kind: "one-sided", ...lastOneSided };
    return {
      configs: configText(kernelA.configs || {}, kernelB.configs || {}),
      a: { id: kernelA.id, name: kernelA.name, target: kernelA.target, passes: passesOf(kernelA).length },
      b: { id: kernelB.id, name: kernelB.name, target: kernelB.target, passes: passesOf(kernelB).length },
      rows, divergence, sameSource, identical: !divergence && sameSource, equivalent: !divergence && sameSource, renamed: "", text,
      sources: sources.map(([role, sa, sb]) => [role, sa ? text(0, sa) : null, sb ? text(1, sb) : null]),
    };
  }

  // "key: A unset, B True; …" for each pass config the two differ in (compare_view.config_text): the
  // summaries carry each value as Python writes it (compare_view.config_value_text).
  function configText(a, b) {
    const shown = (v) => (v === undefined || v === null ? "unset" : v);
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.filter((k) => shown(a[k]) !== shown(b[k])).map((k) => `${k}: A ${shown(a[k])}, B ${shown(b[k])}`).join("; ");
  }

  // A pass behaving differently because a pass nested in it does: the nested one (compare.py's _innermost).
  function innermost(rows, at) {
    for (;;) {
      const outer = rows[at];
      let inner = -1;
      for (let i = at + 1; i < rows.length; i++) {
        const r = rows[i];
        if (r.a && r.b && r.a.parent === outer.a.seq && r.b.parent === outer.b.seq && r.sameInput && !r.sameOutput) { inner = i; break; }
      }
      if (inner < 0) return { kind: "behaves differently", row: at, a: outer.a, b: outer.b };
      at = inner;
    }
  }

  // [[role, digestA, digestB]]: the generated sources of the two sides, paired by role, device first.
  function pairSources(a, b, digestOf) {
    const roles = [...new Set([...a, ...b].map((s) => s.role))].sort((x, y) => Number(x !== "device") - Number(y !== "device"));
    const last = (list, role) => { const found = list.filter((s) => s.role === role); return found.length ? digestOf(found[found.length - 1]) : null; };
    return roles.map((role) => [role, last(a, role), last(b, role)]);
  }

  // A comparison Python wrote (lower-trace diff --html): the same shape, texts already normalised.
  /** @param {LTComparisonData} data @returns {LTComparison} */
  function fromData(data) {
    const texts = data.texts;
    const has = Object.prototype.hasOwnProperty;
    const text = (side, digest) => (digest && has.call(texts[side], digest) ? texts[side][digest] : "");
    const rows = data.rows.map((row) => ({ a: row.a, b: row.b, sameInput: row.same_input, sameOutput: row.same_output }));
    const divergence = data.divergence && { kind: data.divergence.kind, row: data.divergence.row, a: data.divergence.row >= 0 ? rows[data.divergence.row].a : null, b: data.divergence.row >= 0 ? rows[data.divergence.row].b : null };
    return {
      configs: data.configs || "", a: data.a, b: data.b, rows, divergence, sameSource: data.same_source, identical: data.identical,
      equivalent: data.equivalent === undefined ? data.identical : data.equivalent, renamed: data.renamed || "", text, sources: data.sources,
    };
  }

  return { compare, fromData, align, shortName, kernelRenames, rename, vocabulary, sortedFunctions, configText };
})();
