// @ts-check
import { LTText } from "./text.js";
import { LTBlocks } from "./blocks.js";
/** @import { LTKernelSummary, LTPayload } from "./payload.js" */
/**
 * What a search found: per kernel the steps that match, per kernel and step the hits.
 * @typedef {Object} LTSearchHits
 * @property {Map<string, number>} kernels  kernel id -> matching steps
 * @property {Map<string, Map<number|string, number>>} steps  kernel id -> step seq -> hits
 * @property {number} passes  matching steps in all
 * @property {number} total  hits in all
 */
// Regex search across every snapshot of the run. Kernels are inflated one by one, in block
// order (a block only refers to earlier ones, so every snapshot a kernel names has been
// counted when its turn comes); texts are dropped once counted. Cancelled by a newer search.
export const LTSearch = (() => {
  const { countMatches } = LTText;
  let generation = 0;

  const nextTask = () => new Promise((/** @type {(value?: unknown) => void} */ resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve();
    channel.port2.postMessage(null);
  });

  function cancel() {
    generation++;
  }

  // Resolves to {kernels: Map id -> matching steps, steps: Map id -> Map seq -> hits, passes, total},
  // or null when a newer search (or cancel) took over. onProgress(done, count) between kernels.
  /**
   * @param {RegExp} regex
   * @param {LTKernelSummary[]} kernels
   * @param {(done: number, count: number) => void} onProgress
   * @returns {Promise<LTSearchHits|null>}
   */
  async function run(regex, kernels, onProgress) {
    const mine = ++generation;
    /** @type {Map<string, number>} */
    const perDigest = new Map();
    /** @type {LTSearchHits} */
    const hits = { kernels: new Map(), steps: new Map(), passes: 0, total: 0 };
    const ordered = [...kernels].sort((a, b) => a.block - b.block);
    let slice = performance.now();
    // A few payloads inflate ahead (off the main thread) while the current one is counted.
    const AHEAD = 4;
    /** @type {Array<Promise<LTPayload|null>|undefined>} */
    const pending = [];
    const fetch = (i) => { if (i < ordered.length) pending[i] = LTBlocks.payload(ordered[i].block, false).catch(() => null); };
    for (let i = 0; i < AHEAD; i++) fetch(i);
    for (let i = 0; i < ordered.length; i++) {
      const summary = ordered[i];
      fetch(i + AHEAD);
      const data = await pending[i]; // null: a torn block, no hits
      pending[i] = undefined;
      if (mine !== generation) return null;
      if (data) {
        for (const digest of Object.keys(data.snapshots)) perDigest.set(digest, countMatches(regex, data.snapshots[digest]));
        const kernel = { ...summary, steps: data.steps, error: data.error || summary.error };
        const stepHits = new Map();
        for (const step of LTBlocks.stepsOf(kernel)) {
          const digest = LTBlocks.searchDigest(step);
          const count = (digest ? perDigest.get(digest) || 0 : 0) + (step.error ? countMatches(regex, LTBlocks.errorText(step)) : 0);
          if (count) { stepHits.set(step.seq, count); hits.total += count; }
        }
        if (stepHits.size) { hits.kernels.set(summary.id, stepHits.size); hits.passes += stepHits.size; }
        hits.steps.set(summary.id, stepHits);
      }
      if (performance.now() - slice > 40) { // keep the page responsive between slices
        onProgress(i + 1, ordered.length);
        await nextTask();
        if (mine !== generation) return null;
        slice = performance.now();
      }
    }
    return hits;
  }

  return { run, cancel };
})();
