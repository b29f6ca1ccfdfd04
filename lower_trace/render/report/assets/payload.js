// @ts-check
// Types only, for the checker (jsconfig.json): the JSON Python writes into a page, as the page
// reads it. Never inlined into a page: the other assets only @import its types, in comments.
// Records go through model_json.to_json, which leaves out every field at its default: those are the
// optional ones below. Keep each typedef next to the Python it names when that Python changes.

/**
 * model.ErrorInfo.
 * @typedef {Object} LTError
 * @property {string} type
 * @property {string} message
 * @property {string} [traceback]
 */

/**
 * model.RunInfo, with the notes the page head adds (page.page_head).
 * @typedef {Object} LTRun
 * @property {string} run_id
 * @property {number} started  seconds since the epoch
 * @property {string} script
 * @property {string} [title]
 * @property {string[]} [argv]
 * @property {number} [pid]
 * @property {string} [mode]
 * @property {string} [python]
 * @property {Object<string, string>} versions
 * @property {string[]} notes
 */

/**
 * What Python and the page share, written once in Python (page.page_rules).
 * @typedef {Object} LTRules
 * @property {string} unsafe  the terminal's unsafe characters as a character class for a regex with the u flag
 * @property {string} between  what the compile time outside the steps is
 * @property {Object<string, {text: string, badge: boolean}>} edit  per edit status (model.EditStatus): its meaning, and whether it is badged
 * @property {LTKernelStates} state  model.KernelState: the label of each state
 */

/**
 * model.KernelState's labels by member name: what became of a compile, as every view says it.
 * @typedef {Object} LTKernelStates
 * @property {string} OK
 * @property {string} FAILED  a pass raised
 * @property {string} COMPILE_FAILED  it failed outside every pass (codegen, gcc, nvcc ...)
 * @property {string} DID_NOT_FINISH  no end record: the process was killed or crashed mid-compile
 */

/**
 * The report's head block, #run-data (page.page_head).
 * @typedef {Object} LTReportHeader
 * @property {number} format  page.PAGE_FORMAT
 * @property {LTRun} run
 * @property {LTRules} rules
 */

/**
 * The comparison page's head block, #run-data (compare_page.write_compare_page).
 * @typedef {Object} LTCompareHeader
 * @property {LTRules} rules
 * @property {[string, string]} labels  A's and B's: trace, kernel, target, passes, versions
 * @property {Object|null} cause  regress's "why the code differs" (regress_cause_view.page_data; compare_cause.js reads it)
 */

/**
 * One kernel's summary, a script.lt-kernel block (page.kernel_summary): what the index shows.
 * @typedef {Object} LTKernelSummary
 * @property {string} variant  its working copy's file ("": none)
 * @property {string} id
 * @property {string} name
 * @property {string} target
 * @property {string} entry
 * @property {"running"|"ok"|"failed"} status  model.KernelStatus
 * @property {number} ms
 * @property {number} passes
 * @property {number} changed  passes that changed the IR
 * @property {number} failed  passes that failed
 * @property {number} steps  passes and codegen steps
 * @property {{type: string, message: string}|null} error  the message cut to page.SUMMARY_MESSAGE characters
 * @property {string[]} edits  the edit statuses of its codegen steps
 * @property {Object<string, string>} configs  its pass configs, each value as a comparison says it (analysis.configs.config_value_text)
 * @property {Object<string, [number, number, number, number]>} timing  per step name: calls, self ms, slowest self ms, its seq (analysis.timing.kernel_totals)
 * @property {number} block  the number of its payload block (#lt-p<block>)
 * @property {number[]} refs  the earlier blocks that carry snapshots it names
 * @property {Array<[string, number, string]>} [stack]  the user's frames that started the compile, outermost first
 * @property {LTDeviceIndex|null} [device]  the index's device columns (page.device_index)
 * @property {LTLaunches|null} [launches]  its recorded launches (null in its block; a block of their own, lt-launches, fills it in: page.launches_index)
 */

/**
 * A kernel's recorded launches (page.launches_index).
 * @typedef {Object} LTLaunches
 * @property {LTLaunchRow[]} rows
 * @property {string} repro  the command that writes the first launch kept with its tensors as a repro ("": none)
 */

/**
 * @typedef {Object} LTLaunchRow
 * @property {number} n
 * @property {number} ms
 * @property {string} site  file:line of the call
 * @property {LTLaunchValue[]} args
 * @property {LTLaunchValue[]} returned
 * @property {string} error  the call raised: its first line ("": it returned)
 * @property {boolean} kept  every tensor argument kept with its data
 */

/**
 * @typedef {Object} LTLaunchValue
 * @property {string} name
 * @property {string} text  float32[64,32] cpu, or = 2.5
 * @property {boolean} kept
 * @property {boolean} written  the call changed it
 * @property {string} note
 */

/**
 * @typedef {Object} LTDeviceIndex
 * @property {number} registers
 * @property {number} spill_stores  bytes
 * @property {number} spill_loads
 * @property {number} shared  static + dynamic bytes
 * @property {string} occupancy  as `lower-trace device` says it
 * @property {number|null} warps  warps per SM (null: unknown)
 */

/**
 * The device stage's view (page.device_payload): nvcc's compile of the generated source.
 * @typedef {Object} LTDevice
 * @property {number} seq  the codegen step whose source was compiled
 * @property {string} arch
 * @property {string} how  capture | on demand
 * @property {boolean} edited
 * @property {string} command
 * @property {string} line  registers · spills · … · occupancy
 * @property {Array<[string, number]>} counts  instructions by kind
 * @property {string} source  digests of snapshots
 * @property {string} ptx
 * @property {string} sass
 * @property {string} source_name  the compiled file's name (the SASS pane's column names it)
 * @property {{ptx?: number[]}} cuda  per line of the PTX: its CUDA line (0: none)
 * @property {Array<[number, number, number]>} sass_rows  the SASS pane's rows (page.sass_rows): [line index in the SASS, CUDA line (0: none), nvcc's line where the instruction was moved off it (0: not)]
 * @property {string} error
 */

/**
 * A kernel's payload, #lt-p<block>: base64 of gzip of this JSON (writer.ReportWriter.add_kernel).
 * @typedef {Object} LTPayload
 * @property {LTStep[]} steps  page.kernel_steps
 * @property {Object<string, string>} snapshots  the texts no earlier block carried, by digest
 * @property {LTError|null} error
 * @property {true} [spans]  its snapshots carry source spans: it has a source map, in a block of its own (#lt-o<block>:
 *   base64 of gzip of LTOriginsData or null, writer.ReportWriter.add_source_map), appended when the run closed
 * @property {LTDevice} [device]  the device stage, absent without one
 */

/**
 * A step: model.PassRecord (kind "pass") or model.CodegenRecord (kind "codegen"), with its self
 * time and place on the kernel's time line (page.kernel_steps; analysis.timing). A comparison's
 * passes (compare_page.comparison_data) have no self and at.
 * @typedef {Object} LTStep
 * @property {"pass"|"codegen"} kind
 * @property {string} kernel
 * @property {number} seq
 * @property {number} [ms]
 * @property {number} [self]
 * @property {number} [at]
 * @property {number} [lines]  the IR lines after it, of the source for codegen (analysis.timing.ir_lines; absent: none)
 * @property {LTError} [error]
 * @property {string} [name]  a pass's
 * @property {"changed"|"unchanged"|"failed"|"incomplete"|"skipped"} [status]  a pass's (model.PassStatus)
 * @property {number} [depth]
 * @property {number} [parent]  the seq of the pass it is nested in
 * @property {string} [phase]
 * @property {string} [caller]
 * @property {string} [before]  digests of snapshots
 * @property {string} [after]
 * @property {string} [input]  the digest of its input as TVM's JSON (kept to rerun it)
 * @property {string} [repro]  the folder of the reproducer written for it
 * @property {number} [ordinal]
 * @property {LTFragmentLayout[]} [layouts]
 * @property {LTPassCall} [call]
 * @property {"device"|"host"} [role]  a codegen step's
 * @property {string} [function]
 * @property {string} [target]
 * @property {string} [language]
 * @property {string} [tir]  digests of snapshots
 * @property {string} [source]
 * @property {string} [generated]
 * @property {string} [line_map]  the digest of the generated source's line map (per line, its TIR line)
 * @property {string} [edit_status]  model.EditStatus
 * @property {string} [edit_path]
 * @property {string} [edit_backup]
 */

/**
 * The row of a compile that failed outside every pass (blocks.compileFailure): a step's other
 * fields, read where a step's are, are absent.
 * @typedef {Omit<Partial<LTStep>, "kind" | "seq" | "status"> & {kind: "error", seq: "error", status: "failed", name: string, error: LTError}} LTFailureRow
 */

/**
 * A row of a kernel's step list: a step, or the row of a compile that failed outside the passes.
 * @typedef {LTStep | LTFailureRow} LTRow
 */

/**
 * model.PassCall: how Python built a pass that takes arguments.
 * @typedef {Object} LTPassCall
 * @property {string} factory
 * @property {string[]} [args]
 * @property {Array<[string, string]>} [kwargs]
 * @property {string[]} [imports]
 * @property {string} [problem]
 */

/**
 * model.FragmentLayout: a fragment buffer spread over threads (expressions as TVM prints them).
 * @typedef {Object} LTFragmentLayout
 * @property {string} buffer
 * @property {number[]} shape
 * @property {string[]} vars
 * @property {string} thread
 * @property {string[]} index
 * @property {number} [replicate]
 * @property {number} [thread_min]
 * @property {number} [threads]
 * @property {string} [function]
 * @property {string} [scope]
 * @property {string} [dtype]
 */

/**
 * A kernel opened in the page: its summary with its steps, full error and snapshot texts (blocks.open).
 * originsMissing: it has spans but its source map is not in the file (a killed run, or one left out at exit).
 * @typedef {Omit<LTKernelSummary, "error" | "steps"> & {steps: LTStep[], error: LTError|null, snap: (digest: string) => string, origins?: LTOriginsData|null, originsMissing?: boolean, deviceStage?: LTDevice|null}} LTKernel
 */

/**
 * The comparison page's payload, #lt-p0 (compare_page.comparison_data): texts as compared (normalised).
 * @typedef {Object} LTComparisonData
 * @property {Array<{a: LTStep|null, b: LTStep|null, same_input: boolean|null, same_output: boolean|null}>} rows
 * @property {{kind: string, row: number}|null} divergence
 * @property {boolean} same_source
 * @property {boolean} identical
 * @property {boolean} equivalent
 * @property {string} renamed
 * @property {string} configs
 * @property {Array<[string, string|null, string|null]>} sources  role, A's source, B's source
 * @property {[Object<string, string>, Object<string, string>]} texts  each side's texts by digest
 * @property {LTComparedKernel} a
 * @property {LTComparedKernel} b
 */

/**
 * @typedef {Object} LTComparedKernel
 * @property {string} id
 * @property {string} name
 * @property {string} target
 * @property {number} passes
 */

/**
 * A kernel's source map (render/report/origins_data.py): per snapshot or generated source (by
 * digest) an origin number per line (-1: none); origins are [place, how, [library file, line]|null];
 * places are [file number, line] of the user's program. how (analysis/origins.py): "span" (the
 * statement's own span), "operands" (the tile op whose buffers it uses), "copy" (a copy a pass made
 * of that statement), "call" (TileLang's own code called from that line), "body" (a loop or branch
 * built around its lowering), "allocation", "attribute" (the call that put an attribute on the
 * kernel), "let" (the assignment TileLang inlined where codegen prints it), "error" -- facts -- or "guess" (inferred from where the line sits in a diff; older traces: "inherited").
 * @typedef {Object} LTOriginsData
 * @property {string[]} files
 * @property {Array<[number, number]>} places
 * @property {Array<[number, string, [string, number]|null]>} table
 * @property {Object<string, number[]>} lines
 * @property {Object<string, Array<[number, string, number, number]>>} history  by place: [pass seq, what, lines before, after]
 * @property {Object<string, {first: number, lines: string[]}>} sources  by file: the part of it shown
 */
