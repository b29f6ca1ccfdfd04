// @ts-check
/** @import { LTComparisonView } from "./compare_view.js" */
/** @import { LTKernel } from "./payload.js" */
/** @import { LTSearchHits } from "./search.js" */
// The page's state in one place: its shape, its defaults, and the fields a page keeps across
// visits (localStorage, one key each). create() returns the state as a sealed object -- a field
// that is not declared here cannot be added -- whose saved fields write themselves through, and a
// subscribe(field, fn) that tells fn of every assignment to that field (the URL follows cmpRow).
// A view watches the fields it shows instead (watch): an action assigns several fields in one
// batch, and each view whose fields were assigned renders once at its end, in the order the views
// began watching (the pass list before the active row, the detail pane before the URL).

/**
 * @typedef {Object} PageState
 * @property {LTKernel|null} current  the kernel open in the report (inflated)
 * @property {number|"error"|null} seq  the step shown ("error": the row of a compile that failed outside the passes)
 * @property {string} phase  the phase the pass list shows ("": all)
 * @property {RegExp|null} regex  the search (highlighted in every view)
 * @property {LTSearchHits|null} hits  what the search found
 * @property {boolean} hideUnchanged  the pass list leaves out passes that changed nothing
 * @property {"split"|"unified"} mode  diffs side by side or unified
 * @property {boolean} blame  an IR shows which pass last changed each line
 * @property {"light"|"dark"|null} theme  the theme picked (null: the system's)
 * @property {"kernel"|"run"|null} timing  a timing chart is in the detail pane: the kernel's or the run's
 * @property {"run"|"self"} timingOrder  the kernel chart's order: the time line, or slowest first
 * @property {LTComparing|null} compare  another kernel compared with the open one
 * @property {boolean} cmpHideSame  a comparison's rows leave out the aligned passes that behave the same
 * @property {number|"source"|null} cmpRow  the comparison row shown (an aligned row, or the generated sources)
 */

/**
 * @typedef {Object} LTComparing
 * @property {string} a  the open kernel's id
 * @property {string} b  the other kernel's id
 * @property {LTComparisonView|null} view
 */

/**
 * @typedef {Object} LTStore
 * @property {PageState} state
 * @property {<K extends keyof PageState>(field: K, fn: (value: PageState[K]) => void) => void} subscribe
 * @property {(fields: Array<keyof PageState>, fn: () => void) => void} watch  fn runs after an assignment to any of fields (once per batch)
 * @property {(fn: () => void) => void} batch  runs fn, then the watchers of the fields it assigned
 */

export const LTState = (() => {
  /** @returns {PageState} */
  const defaults = () => ({
    current: null, seq: null, phase: "", regex: null, hits: null,
    hideUnchanged: false, mode: "split", blame: false, theme: null,
    timing: null, timingOrder: "run", compare: null,
    cmpHideSame: false, cmpRow: null,
  });

  const flag = { read: (/** @type {string|null} */ text) => text === "1", write: (/** @type {boolean} */ on) => (on ? "1" : "0") };
  /** The fields a page may keep across visits: the localStorage key of each, and how its value is written there. */
  const SAVED = {
    hideUnchanged: { key: "lt-hide-unchanged", ...flag },
    mode: { key: "lt-mode", read: (/** @type {string|null} */ text) => (text === "unified" ? "unified" : "split"), write: String },
    blame: { key: "lt-blame", ...flag },
    cmpHideSame: { key: "lt-cmp-hide-same", ...flag },
    theme: { key: "lt-theme", read: (/** @type {string|null} */ text) => (text === "light" || text === "dark" ? text : null), write: String },
  };

  /**
   * The state of one page. saved: the fields it keeps across visits (read now, written on each
   * assignment); initial: values other than the defaults.
   * @param {Array<keyof typeof SAVED>} saved
   * @param {Partial<PageState>} [initial]
   * @returns {LTStore}
   */
  function create(saved, initial = {}) {
    /** @type {Record<string, any>} */
    const values = { ...defaults(), ...initial };
    for (const field of saved) values[field] = SAVED[field].read(localStorage.getItem(SAVED[field].key));
    /** @type {Map<string, Array<(value: any) => void>>} */
    const listeners = new Map();
    /** @type {Array<{fields: string[], fn: () => void, due: boolean}>} */
    const watchers = [];
    let depth = 0; // > 0: inside a batch (or a flush), so watchers wait for its end
    const flush = () => {
      depth++;
      try {
        // A watcher may assign a field a later watcher shows; one that comes before it runs again.
        for (let ran = true; ran;) {
          ran = false;
          for (const watcher of watchers) {
            if (!watcher.due) continue;
            watcher.due = false;
            ran = true;
            watcher.fn();
          }
        }
      } finally {
        depth--;
      }
    };
    /** @type {LTStore["batch"]} */
    const batch = (fn) => {
      depth++;
      try {
        fn();
      } finally {
        depth--;
      }
      if (!depth) flush();
    };
    const state = {};
    for (const field of Object.keys(defaults())) {
      const keep = saved.includes(/** @type {keyof typeof SAVED} */ (field)) ? SAVED[field] : null;
      Object.defineProperty(state, field, {
        enumerable: true,
        get: () => values[field],
        set: (value) => {
          values[field] = value;
          if (keep) localStorage.setItem(keep.key, keep.write(value));
          for (const fn of listeners.get(field) || []) fn(value);
          for (const watcher of watchers) if (watcher.fields.includes(field)) watcher.due = true;
          if (!depth) flush();
        },
      });
    }
    Object.seal(state);
    /** @type {LTStore["subscribe"]} */
    const subscribe = (field, fn) => {
      if (!listeners.has(field)) listeners.set(field, []);
      listeners.get(field).push(fn);
    };
    /** @type {LTStore["watch"]} */
    const watch = (fields, fn) => { watchers.push({ fields, fn, due: false }); };
    return { state: /** @type {PageState} */ (state), subscribe, watch, batch };
  }

  return { create, SAVED };
})();
