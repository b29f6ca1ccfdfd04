// @ts-check
/** @import { LTDevice, LTFailureRow, LTKernel, LTKernelSummary, LTOriginsData, LTPayload, LTReportHeader, LTRow, LTRules, LTRun } from "./payload.js" */
// The report's data: the run header, then the kernel blocks the writer appended as kernels
// finished (a JSON summary each, read at load) and their payloads -- steps and the snapshot
// texts no earlier block carried, base64 gzip JSON -- inflated only when a kernel is opened.
export const LTBlocks = (() => {
  /** @type {LTReportHeader} (the comparison page's has its rules too, and never gathers) */
  const header = JSON.parse(document.getElementById("run-data").textContent);

  // Called once the whole file is parsed: the blocks follow the scripts.
  /** @returns {{run: LTRun, rules: LTRules, kernels: LTKernelSummary[], notes: string[], finished: boolean}} */
  function gather() {
    /** @type {LTKernelSummary[]} */
    const kernels = [];
    const notes = [...(header.run.notes || [])];
    for (const node of document.querySelectorAll("script.lt-kernel")) {
      let kernel;
      try { kernel = JSON.parse(node.textContent); } catch { continue; } // torn by a killed writer
      if (kernel && typeof kernel.id === "string" && Number.isInteger(kernel.block)) kernels.push(kernel);
    }
    // A device stage that came after its kernel's block (one core: ptxas' report waits for the
    // run's close; writer.add_device): its index columns.
    for (const node of document.querySelectorAll("script.lt-device")) {
      let late;
      try { late = JSON.parse(node.textContent); } catch { continue; } // torn by a killed writer
      const kernel = late && kernels.find((k) => k.block === late.block);
      if (kernel) kernel.device = late.device;
    }
    // A kernel's recorded launches: they come after its compile, so in a block of their own (writer.add_launches).
    for (const node of document.querySelectorAll("script.lt-launches")) {
      let late;
      try { late = JSON.parse(node.textContent); } catch { continue; } // torn by a killed writer
      const kernel = late && kernels.find((k) => k.block === late.block);
      if (kernel) kernel.launches = late.launches;
    }
    for (const node of document.querySelectorAll("script.lt-note")) {
      try { notes.push(String(JSON.parse(node.textContent))); } catch { /* torn */ }
    }
    return { run: header.run, rules: header.rules, kernels, notes, finished: document.getElementById("lt-end") !== null };
  }

  function bytesOf(b64) {
    const bin = atob(b64.trim());
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  }

  // A packed block's JSON, inflated with the browser's own gzip.
  /** @param {Element} node */
  async function unpack(node) {
    const stream = new Blob([bytesOf(node.textContent)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  // A block's payload.
  /** @param {number} block @returns {Promise<LTPayload>} */
  async function inflate(block) {
    const node = document.getElementById(`lt-p${block}`);
    if (!node) throw new Error(`block ${block} is missing from the file`);
    return unpack(node);
  }

  // A kernel's source map: a block of its own (lt-o<block>), appended when the run closed or by
  // `lower-trace report` (writer.add_source_map). undefined: not computed (yet); null: none.
  /** @param {number} block @returns {Promise<LTOriginsData|null|undefined>} */
  async function sourceMap(block) {
    const node = document.getElementById(`lt-o${block}`);
    if (!node) return undefined;
    try { return await unpack(node); } catch { return undefined; } // torn by a killed writer
  }

  // The device stage of a block written before it had one (lt-d<block>); undefined: none.
  /** @param {number} block @returns {Promise<LTDevice|undefined>} */
  async function lateDevice(block) {
    const node = document.getElementById(`lt-d${block}`);
    if (!node) return undefined;
    try { return await unpack(node); } catch { return undefined; } // torn by a killed writer
  }

  // Recently inflated payloads (promises, so two callers share one inflate); bounded.
  /** @type {Map<number, Promise<LTPayload>>} */
  const cache = new Map();
  const CACHE_BLOCKS = 24;
  /** @param {number} block @param {boolean} [keep] @returns {Promise<LTPayload>} */
  function payload(block, keep = true) {
    let entry = cache.get(block);
    if (entry) {
      cache.delete(block);
      cache.set(block, entry);
      return entry;
    }
    entry = inflate(block);
    if (!keep) return entry;
    cache.set(block, entry);
    entry.catch(() => cache.delete(block));
    while (cache.size > CACHE_BLOCKS) cache.delete(cache.keys().next().value);
    return entry;
  }

  // A kernel with its steps, full error and snapshot lookup (its own block, then the earlier
  // blocks it names). Kept for the last few kernels opened.
  /** @type {Map<string, LTKernel>} */
  const opened = new Map();
  const OPENED = 12;
  /** @param {LTKernelSummary} summary @returns {Promise<LTKernel>} */
  async function open(summary) {
    if (opened.has(summary.id)) {
      const kernel = opened.get(summary.id);
      opened.delete(summary.id);
      opened.set(summary.id, kernel);
      return kernel;
    }
    const [origins, late, ...parts] = await Promise.all([
      sourceMap(summary.block), lateDevice(summary.block), payload(summary.block), ...(summary.refs || []).map((ref) => payload(ref)),
    ]);
    const sources = parts.map((part) => part.snapshots);
    const has = Object.prototype.hasOwnProperty;
    const snap = (/** @type {string} */ digest) => {
      if (!digest) return "";
      for (const source of sources) if (has.call(source, digest)) return source[digest];
      return "";
    };
    const kernel = {
      ...summary, steps: parts[0].steps, error: parts[0].error || summary.error, snap, origins: origins || null,
      originsMissing: origins === undefined && Boolean(parts[0].spans), deviceStage: parts[0].device || late || null,
    };
    opened.set(summary.id, kernel);
    while (opened.size > OPENED) opened.delete(opened.keys().next().value);
    return kernel;
  }

  // --- what a kernel's steps are -------------------------------------------------------
  const isCodegen = (/** @type {LTRow} */ step) => step.kind === "codegen";

  // A compile that failed outside any pass (a compiler error, a backend error) gets a row of its own.
  /** @typedef {Pick<LTKernel, "status" | "error" | "steps">} LTKernelSteps (an opened kernel, or a search's) */
  /** @param {LTKernelSteps} kernel @returns {LTFailureRow|null} */
  function compileFailure(kernel) {
    if (kernel.status !== "failed" || !kernel.error || kernel.steps.some((s) => s.status === "failed")) return null;
    return { kind: "error", seq: "error", status: "failed", name: header.rules.state.COMPILE_FAILED, error: kernel.error };
  }

  /** @param {LTKernelSteps} kernel @returns {LTRow[]} */
  function stepsOf(kernel) {
    const failure = compileFailure(kernel);
    return failure ? [failure, ...kernel.steps] : kernel.steps;
  }

  // The snapshot a step is searched in: what the pass produced (or received, if it failed); a codegen's source.
  const searchDigest = (/** @type {LTRow} */ step) => (step.kind === "error" ? "" : isCodegen(step) ? step.source : step.after || step.before) || "";
  const errorText = (/** @type {LTRow} */ step) => (step.error ? `${step.error.type}: ${step.error.message}\n${step.error.traceback || ""}` : "");

  return { gather, payload, open, isCodegen, compileFailure, stepsOf, searchDigest, errorText };
})();
