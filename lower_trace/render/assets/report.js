"use strict";
(async function () {
  const data = JSON.parse(document.getElementById("trace-data").textContent);
  // Snapshots arrive as base64 gzip JSON; inflate once with the browser's own gzip.
  async function inflate(b64) {
    const bytes = Uint8Array.from(atob(b64.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  const snapshots = await inflate(document.getElementById("trace-snapshots").textContent);
  const snap = (digest) => (digest && snapshots[digest]) || "";
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  // Line diff by longest common subsequence; fine for IR-sized texts.
  function lineDiff(a, b) {
    const x = a.split("\n"), y = b.split("\n");
    const n = x.length, m = y.length;
    const dp = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        dp[i][j] = x[i] === y[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
    const out = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
      else if (j < m && (i >= n || dp[i][j + 1] >= dp[i + 1][j])) { out.push(["+", y[j]]); j++; }
      else { out.push(["-", x[i]]); i++; }
    }
    return out;
  }

  function showDiff(parent, before, after) {
    const pre = el("pre", "diff");
    const lines = lineDiff(before, after);
    lines.forEach(([tag, text], k) => {
      const near = lines.slice(Math.max(0, k - 3), k + 4).some((l) => l[0] !== " ");
      if (tag === " " && !near) return;
      const row = el("div", tag === "+" ? "add" : tag === "-" ? "del" : "", tag + text);
      pre.appendChild(row);
    });
    parent.appendChild(pre);
  }

  function show(kernel, step, item) {
    document.querySelectorAll(".step.active").forEach((n) => n.classList.remove("active"));
    item.classList.add("active");
    const main = document.getElementById("content");
    main.replaceChildren();
    main.appendChild(el("h2", "", `${kernel.name} · #${step.seq} ${step.kind === "codegen" ? step.function : step.name}`));
    if (step.error) {
      const box = el("div", "error");
      box.appendChild(el("strong", "", `${step.error.type}: ${step.error.message}`));
      if (step.error.traceback) box.appendChild(el("pre", "", step.error.traceback));
      main.appendChild(box);
    }
    if (step.kind === "codegen") {
      main.appendChild(el("h3", "", `generated ${step.language} source (${step.role})`));
      main.appendChild(el("pre", "", snap(step.source)));
      main.appendChild(el("h3", "", "TIR handed to codegen"));
      main.appendChild(el("pre", "", snap(step.tir)));
    } else if (step.status === "changed") {
      showDiff(main, snap(step.before), snap(step.after));
    } else {
      main.appendChild(el("p", "hint", step.status === "unchanged" ? "This pass left the IR unchanged." : "The IR this pass received:"));
      main.appendChild(el("pre", "", snap(step.before)));
    }
    location.hash = `${kernel.id}/${step.seq}`;
  }

  document.getElementById("title").textContent = `lower-trace · ${data.run.script}`;
  document.getElementById("runinfo").textContent = `${data.kernels.length} kernel(s) · run ${data.run.run_id}`;
  const nav = document.getElementById("sidebar");
  const items = [];
  for (const kernel of data.kernels) {
    nav.appendChild(el("div", "kernel", `${kernel.name} [${kernel.target}] · ${kernel.passes} passes, ${kernel.changed} changed, ${kernel.failed} failed`));
    for (const step of kernel.steps) {
      const status = step.kind === "codegen" ? "codegen" : step.status;
      const item = el("div", `step ${status}`);
      item.appendChild(el("span", "dot"));
      item.appendChild(el("span", "", `${step.seq}`));
      item.appendChild(el("span", "phase", step.phase || step.role || ""));
      item.appendChild(el("span", "", step.kind === "codegen" ? step.function : step.name));
      if (step.added !== undefined) {
        item.appendChild(el("span", "stat-add", `+${step.added}`));
        item.appendChild(el("span", "stat-del", `-${step.removed}`));
      }
      item.addEventListener("click", () => show(kernel, step, item));
      nav.appendChild(item);
      items.push([kernel, step, item]);
    }
  }
  const wanted = location.hash.slice(1);
  const first = items.find(([k, s]) => `${k.id}/${s.seq}` === wanted) || items.find(([, s]) => s.status === "failed") || items[0];
  if (first) show(...first);
})();
