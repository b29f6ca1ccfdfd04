"use strict";
// Two compiles compared pass by pass in the page: the same alignment and first divergence as
// lower_trace/analysis/compare.py (a test holds the two to the same answer on real kernels).
// A comparison is {a, b, rows, divergence, sameSource, sources, text}: rows pair a pass of A
// with one of B (or stand alone), text(side, digest) is a snapshot as compared.
const LTCompare = (() => {
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

  // The second kernel's name written as the first's (every occurrence), as compare.py does.
  function normaliser(nameA, nameB) {
    const cache = [new Map(), new Map()];
    return (side, text) => {
      if (side === 0 || !nameB || nameA === nameB) return text;
      let found = cache[1].get(text);
      if (found === undefined) {
        found = text.split(nameB).join(nameA);
        if (cache[1].size > 2000) cache[1].clear();
        cache[1].set(text, found);
      }
      return found;
    };
  }

  const passesOf = (kernel) => kernel.steps.filter((s) => s.kind === "pass");
  const sourcesOf = (kernel) => kernel.steps.filter((s) => s.kind === "codegen")
    .sort((x, y) => (x.role !== "device") - (y.role !== "device") || x.seq - y.seq);

  // kernelA / kernelB: opened kernels of the report (steps, name, snap).
  function compare(kernelA, kernelB) {
    const norm = normaliser(kernelA.name, kernelB.name);
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
      rows, divergence, sameSource, identical: !divergence && sameSource, text,
      sources: sources.map(([role, sa, sb]) => [role, sa ? text(0, sa) : null, sb ? text(1, sb) : null]),
    };
  }

  // "key: A unset, B True; …" for each pass config the two differ in (compare_view.config_text).
  function configText(a, b) {
    const shown = (v) => (v === undefined || v === null ? "unset" : typeof v === "boolean" ? (v ? "True" : "False") : String(v));
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
    const roles = [...new Set([...a, ...b].map((s) => s.role))].sort((x, y) => (x !== "device") - (y !== "device"));
    const last = (list, role) => { const found = list.filter((s) => s.role === role); return found.length ? digestOf(found[found.length - 1]) : null; };
    return roles.map((role) => [role, last(a, role), last(b, role)]);
  }

  // A comparison Python wrote (lower-trace diff --html): the same shape, texts already normalised.
  function fromData(data) {
    const texts = data.texts;
    const has = Object.prototype.hasOwnProperty;
    const text = (side, digest) => (digest && has.call(texts[side], digest) ? texts[side][digest] : "");
    const rows = data.rows.map((row) => ({ a: row.a, b: row.b, sameInput: row.same_input, sameOutput: row.same_output }));
    const divergence = data.divergence && { kind: data.divergence.kind, row: data.divergence.row, a: data.divergence.row >= 0 ? rows[data.divergence.row].a : null, b: data.divergence.row >= 0 ? rows[data.divergence.row].b : null };
    return { configs: data.configs || "", a: data.a, b: data.b, rows, divergence, sameSource: data.same_source, identical: data.identical, text, sources: data.sources };
  }

  return { compare, fromData, align, shortName };
})();
