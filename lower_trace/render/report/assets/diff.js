// @ts-check
// Line and word diffs for the report (Myers' O(ND) algorithm), computed when a pass is shown.
export const LTDiff = (() => {
  // Edit script between two arrays of comparable items: [["=",a,b] | ["-",a,null] | ["+",null,b]].
  function myers(a, b) {
    let start = 0;
    while (start < a.length && start < b.length && a[start] === b[start]) start++;
    let endA = a.length, endB = b.length;
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
    const x = a.slice(start, endA), y = b.slice(start, endB);
    const n = x.length, m = y.length, max = n + m;
    const ops = [];
    for (let i = 0; i < start; i++) ops.push(["=", i, i]);
    if (n === 0 || m === 0) {
      for (let i = 0; i < n; i++) ops.push(["-", start + i, null]);
      for (let j = 0; j < m; j++) ops.push(["+", null, start + j]);
    } else {
      const offset = max + 1;
      let v = new Int32Array(2 * max + 3);
      const trace = [];
      let found = false;
      for (let d = 0; d <= max && !found; d++) {
        if (d * v.length > 4e7) break; // too different to be worth it: show a whole replacement
        trace.push(v.slice());
        for (let k = -d; k <= d; k += 2) {
          let px = (k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])) ? v[offset + k + 1] : v[offset + k - 1] + 1;
          let py = px - k;
          while (px < n && py < m && x[px] === y[py]) { px++; py++; }
          v[offset + k] = px;
          if (px >= n && py >= m) { found = true; break; }
        }
      }
      if (!found) {
        for (let i = 0; i < n; i++) ops.push(["-", start + i, null]);
        for (let j = 0; j < m; j++) ops.push(["+", null, start + j]);
        for (let i = endA, j = endB; i < a.length; i++, j++) ops.push(["=", i, j]);
        return ops;
      }
      // Walk the trace back from the end to recover the edit script.
      const rev = [];
      let px = n, py = m;
      for (let d = trace.length - 1; d >= 0; d--) {
        const vd = trace[d], k = px - py;
        const prevK = (k === -d || (k !== d && vd[offset + k - 1] < vd[offset + k + 1])) ? k + 1 : k - 1;
        const prevX = vd[offset + prevK], prevY = prevX - prevK;
        while (px > prevX && py > prevY) { px--; py--; rev.push(["=", start + px, start + py]); }
        if (d > 0) {
          if (px === prevX) { py--; rev.push(["+", null, start + py]); }
          else { px--; rev.push(["-", start + px, null]); }
        }
      }
      for (let i = rev.length - 1; i >= 0; i--) ops.push(rev[i]);
    }
    for (let i = endA, j = endB; i < a.length; i++, j++) ops.push(["=", i, j]);
    return ops;
  }

  function splitLines(text) {
    if (!text) return [];
    const lines = text.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    return lines;
  }

  // Rows of a line diff: {tag, old, new, oldNo, newNo}; a "~" row pairs a removed with an added line.
  function lineRows(before, after) {
    const a = splitLines(before), b = splitLines(after);
    const rows = [];
    let dels = [], adds = [];
    const flush = () => {
      const paired = Math.min(dels.length, adds.length);
      for (let i = 0; i < paired; i++) rows.push({ tag: "~", old: a[dels[i]], new: b[adds[i]], oldNo: dels[i] + 1, newNo: adds[i] + 1 });
      for (let i = paired; i < dels.length; i++) rows.push({ tag: "-", old: a[dels[i]], oldNo: dels[i] + 1 });
      for (let i = paired; i < adds.length; i++) rows.push({ tag: "+", new: b[adds[i]], newNo: adds[i] + 1 });
      dels = []; adds = [];
    };
    for (const [op, i, j] of myers(a, b)) {
      if (op === "=") { flush(); rows.push({ tag: "=", old: a[i], new: b[j], oldNo: i + 1, newNo: j + 1 }); }
      else if (op === "-") dels.push(i);
      else adds.push(j);
    }
    flush();
    return rows;
  }

  function stats(rows) {
    let added = 0, removed = 0;
    for (const r of rows) {
      if (r.tag === "+" || r.tag === "~") added++;
      if (r.tag === "-" || r.tag === "~") removed++;
    }
    return { added, removed };
  }

  const TOKEN = /\w+|\s+|[^\w\s]/g;
  // Character ranges that differ between two lines, word by word: [oldRanges, newRanges].
  function wordRanges(oldLine, newLine) {
    const a = oldLine.match(TOKEN) || [], b = newLine.match(TOKEN) || [];
    if (a.length * b.length > 250000) return [[[0, oldLine.length]], [[0, newLine.length]]];
    const offA = [0], offB = [0];
    for (const t of a) offA.push(offA[offA.length - 1] + t.length);
    for (const t of b) offB.push(offB[offB.length - 1] + t.length);
    const ra = [], rb = [];
    for (const [op, i, j] of myers(a, b)) {
      if (op === "-") push(ra, offA[i], offA[i + 1]);
      if (op === "+") push(rb, offB[j], offB[j + 1]);
    }
    return [ra, rb];
  }
  function push(ranges, from, to) {
    const last = ranges[ranges.length - 1];
    if (last && last[1] === from) last[1] = to; else ranges.push([from, to]);
  }

  // A unified diff (---/+++/@@ hunks, `context` lines around changes) that patch and review tools read.
  function unifiedText(rows, names = ["before", "after"], context = 3) {
    const lines = [];
    for (const r of rows) {
      if (r.tag === "=") lines.push([" ", r.old]);
      else if (r.tag === "-") lines.push(["-", r.old]);
      else if (r.tag === "+") lines.push(["+", r.new]);
      else lines.push(["-", r.old], ["+", r.new]);
    }
    // oldBefore[k] / newBefore[k]: lines of each side before line k.
    const oldBefore = [0], newBefore = [0];
    for (const [tag] of lines) {
      oldBefore.push(oldBefore[oldBefore.length - 1] + (tag !== "+" ? 1 : 0));
      newBefore.push(newBefore[newBefore.length - 1] + (tag !== "-" ? 1 : 0));
    }
    const changes = lines.map((l, k) => (l[0] === " " ? -1 : k)).filter((k) => k >= 0);
    const out = [`--- ${names[0]}`, `+++ ${names[1]}`];
    let g = 0;
    while (g < changes.length) {
      let last = g;
      // Hunks whose contexts would touch are one (as diff -u and difflib do): at most 2 * context unchanged lines apart.
      while (last + 1 < changes.length && changes[last + 1] - changes[last] <= 2 * context + 1) last++;
      const from = Math.max(0, changes[g] - context), to = Math.min(lines.length, changes[last] + context + 1);
      const oldLen = oldBefore[to] - oldBefore[from], newLen = newBefore[to] - newBefore[from];
      const oldStart = oldLen ? oldBefore[from] + 1 : oldBefore[from];
      const newStart = newLen ? newBefore[from] + 1 : newBefore[from];
      out.push(`@@ -${oldStart},${oldLen} +${newStart},${newLen} @@`);
      for (let k = from; k < to; k++) out.push(lines[k][0] + lines[k][1]);
      g = last + 1;
    }
    return out.length > 2 ? out.join("\n") + "\n" : "";
  }

  return { myers, lineRows, stats, wordRanges, unifiedText, splitLines };
})();
