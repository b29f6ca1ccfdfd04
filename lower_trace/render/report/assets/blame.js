// @ts-check
import { LTDiff } from "./diff.js";
// Blame in the page: which pass last changed each line of an IR. The same reading of the
// IR's history as lower_trace/analysis/blame.py (a test holds the two to the same answer):
// passes nest, so the history is events in time order -- a pass starts with the IR it
// received, its nested passes run, it ends with the IR it made -- and a change between two
// events belongs to the innermost pass running then. Lines keep the pass that last changed them.
export const LTBlame = (() => {
  // The functions a TVMScript module defines; a nested pass whose input shares none with the IR
  // so far works on a helper module the enclosing pass built (blame.py's on_another_module).
  const functions = (text) => new Set([...text.matchAll(/^\s*def (\w+)\(/gm)].map((m) => m[1]));
  function onAnotherModule(text, current) {
    const mine = functions(current), theirs = functions(text);
    if (!mine.size || !theirs.size) return false;
    for (const name of theirs) if (mine.has(name)) return false;
    return true;
  }

  // [{by, before, after}] in time order, by = the pass step (null: before any pass); up to the end of pass `until`.
  function history(steps, snap, until) {
    const children = new Map();
    for (const step of steps) {
      if (step.kind !== "pass") continue;
      const key = step.parent === undefined ? null : step.parent;
      if (!children.has(key)) children.set(key, []);
      children.get(key).push(step);
    }
    for (const list of children.values()) list.sort((x, y) => x.seq - y.seq);
    const changes = [];
    let current = null, done = false;
    const reach = (digest, by) => {
      if (!digest || done) return;
      const text = snap(digest);
      if (current === null) { current = text; return; }
      if (text !== current) { changes.push({ by, before: current, after: text }); current = text; }
    };
    const visit = (step, parent) => {
      if (parent && current !== null && onAnotherModule(snap(step.before), current)) return; // a helper module's pass
      reach(step.before, parent);
      for (const child of children.get(step.seq) || []) visit(child, step);
      reach(step.after, step);
      if (until !== undefined && until !== null && step.seq === until) done = true;
    };
    for (const top of children.get(null) || []) visit(top, null);
    if (!changes.length && current !== null) return [{ by: null, before: current, after: current }];
    return changes;
  }

  // Each line of the last IR of the history with the pass that last changed it: [{text, by}].
  // TileLang filters one module twice (host, device), so a change may start from an IR seen before.
  function blameLines(changes) {
    if (!changes.length) return [];
    const split = LTDiff.splitLines;
    const first = changes[0].before;
    const seen = new Map([[first, split(first).map(() => null)]]);
    let lines = split(first), owners = seen.get(first);
    for (const change of changes) {
      if (seen.has(change.before)) { lines = split(change.before); owners = seen.get(change.before); }
      const next = split(change.after);
      if (change.by === null && seen.has(change.after)) { lines = next; owners = seen.get(change.after); continue; }
      const kept = next.map(() => change.by);
      for (const [op, i, j] of LTDiff.myers(lines, next)) if (op === "=") kept[j] = owners[i];
      lines = next;
      owners = kept;
      if (!seen.has(change.after)) seen.set(change.after, owners);
    }
    return lines.map((text, i) => ({ text, by: owners[i] }));
  }

  // The blamed lines of the IR after pass `seq` (every pass when undefined).
  const at = (kernel, seq) => blameLines(history(kernel.steps, kernel.snap, seq));

  // The pass whose output is this text (the TIR a codegen step was handed): the last one, or null.
  function passMaking(kernel, digest) {
    const text = kernel.snap(digest);
    let found = null;
    for (const step of kernel.steps) if (step.kind === "pass" && step.after && kernel.snap(step.after) === text) found = step;
    return found;
  }

  return { history, blameLines, at, passMaking };
})();
