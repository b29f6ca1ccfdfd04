"""What the report tests open: one real multi-kernel run with a failure, one hostile, a sweep
made from real kernels; and a page of the report in Chromium. Imports neither TileLang nor
playwright (the unit tier uses the hostile run, the sweep and lcs): real_run imports TileLang,
Page drives the browser it is given."""

import json
import os
import time

import lower_trace
from lower_trace.model import ErrorInfo, PassRecord, PassStatus, RunInfo
from lower_trace.model_json import to_json
from lower_trace.render.report.from_trace import write_report
from lower_trace.store.layout import digest_of
from lower_trace.store.writer import TraceWriter

EVIL_NAME = 'k</script><script>window.__pwned=1</script><!--\u2028"\'&<b>x</b>\u202eevil'
EVIL_IR = (
    "# </script><script>window.__pwned=2</script>\n"
    "x = '<img src=x onerror=\"window.__pwned=3\">'  <!-- \u2028 \u2029\n"
    "y = 1  # \u202eoverride\u202c \u2066isolate\u2069\n"
)


def real_run(trace_dir):
    """gemm + elementwise (CUDA), a C kernel, and a compile that fails in a pass."""
    import tilelang
    from tilelang import tvm

    import kernels

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with lower_trace.trace(mode="html", trace_dir=trace_dir) as run:
        with target:
            tilelang.lower(kernels.gemm(), target=target)
            tilelang.lower(kernels.elementwise_add(), target=target)
        tilelang.lower(kernels.vector_add_c(), target="c")
        try:
            with target:
                tilelang.lower(kernels.nested_parallel(), target=target)
        except ValueError:
            pass
    return run.run_dir


def hostile_run(run_dir):
    run = RunInfo(run_id="run-hostile", started=0.0, script=EVIL_NAME, argv=(EVIL_NAME,))
    writer = TraceWriter(run_dir, run)
    before, after = EVIL_IR, EVIL_IR.replace("y = 1", "y = 2 </script>")
    for text in (before, after):
        writer.add_snapshot(digest_of(text), text)
    writer.append("kernel", {"kernel_id": "k1", "name": EVIL_NAME, "target": EVIL_NAME})
    records = [
        PassRecord(
            kernel="k1", seq=0, name=EVIL_NAME, status=PassStatus.CHANGED, phase=EVIL_NAME, caller=EVIL_NAME, before=digest_of(before), after=digest_of(after)
        ),
        PassRecord(
            kernel="k1", seq=1, name="tl.Evil", status=PassStatus.FAILED, phase="p", before=digest_of(after), error=ErrorInfo(EVIL_NAME, EVIL_NAME, EVIL_IR)
        ),
    ]
    for record in records:
        writer.append("pass", to_json(record))
    writer.append("kernel_end", {"kernel_id": "k1", "status": "failed", "error": to_json(ErrorInfo(EVIL_NAME, EVIL_NAME))})
    writer.close()
    return write_report(run_dir)


# --- a sweep: many kernels made from a few real ones ------------------------------------

SHARED_NOTE = "# lower-trace sweep fixture"


def variant(kernel, index, text_of, shared):
    """Kernel `index` of a sweep, made from a real one: every snapshot gets a line naming the
    variant (so each variant has texts of its own), except the first IR the kernel received,
    which every variant of that kernel shares (so later blocks refer to earlier ones)."""
    import dataclasses

    from lower_trace.model import CodegenRecord

    texts = {}

    def mapped(digest):
        if not digest:
            return ""
        if digest == shared:
            texts[digest] = text_of(digest)
            return digest
        text = f"# variant {index}\n{text_of(digest)}"
        new = digest_of(text)
        texts[new] = text
        return new

    kernel_id = f"k{index}"
    steps = []
    for step in kernel.steps:
        if isinstance(step, CodegenRecord):
            steps.append(dataclasses.replace(step, kernel=kernel_id, tir=mapped(step.tir), source=mapped(step.source), generated=mapped(step.generated)))
        else:
            steps.append(dataclasses.replace(step, kernel=kernel_id, before=mapped(step.before), after=mapped(step.after)))
    made = dataclasses.replace(
        kernel,
        kernel_id=kernel_id,
        name=f"{kernel.name}_{index}",
        passes=tuple(s for s in steps if not isinstance(s, CodegenRecord)),
        codegen=tuple(s for s in steps if isinstance(s, CodegenRecord)),
    )
    return made, texts


def sweep_report(trace, path, count, close=True, latest_link=None):
    """A report of `count` kernels k1..k<count> built from trace's real kernels, in turn,
    through ReportWriter as a traced run would. Returns the writer (closed if close)."""
    from lower_trace.render.report.writer import ReportWriter

    writer = ReportWriter(path, trace.run, latest_link=latest_link)
    bases = trace.kernels
    shared = {k.kernel_id: (k.passes[0].before if k.passes else "") for k in bases}
    for index in range(1, count + 1):
        base = bases[(index - 1) % len(bases)]
        kernel, texts = variant(base, index, trace.snapshot, shared[base.kernel_id])
        writer.add_kernel(kernel, texts.__getitem__)
    if close:
        writer.close()
    return writer


# --- the times a trace recorded -------------------------------------------------------------


def recorded_times(path):
    """{kernel: (compile ms, ms in its top-level passes and codegen)}, read off trace.jsonl itself."""
    compile_ms, steps_ms = {}, {}
    with open(os.path.join(path, "trace.jsonl")) as records:
        for line in records:
            record = json.loads(line)
            if record["type"] == "kernel_end":
                compile_ms[record["kernel_id"]] = record["ms"]
            elif record["type"] == "codegen" or (record["type"] == "pass" and "parent" not in record):
                steps_ms[record["kernel"]] = steps_ms.get(record["kernel"], 0.0) + record.get("ms", 0.0)
    return {kernel: (compile_ms[kernel], steps_ms.get(kernel, 0.0)) for kernel in compile_ms}


# --- a report in the browser ------------------------------------------------------------------


def wait_until(page, predicate, timeout=5.0):
    """Poll a JS predicate (the report's CSP forbids the eval behind wait_for_function)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(predicate):
        assert time.monotonic() < deadline, predicate
        time.sleep(0.05)


class Page:
    """A report opened in a fresh tab, recording console messages and requests."""

    def __init__(self, browser, path, hash_="", width=1400):
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        self.page = self.context.new_page()
        self.messages, self.requests = [], []
        self.page.on("console", lambda m: self.messages.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.messages.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", lambda d: (self.messages.append(f"dialog: {d.message}"), d.dismiss()))
        self.url = "file://" + path
        self.goto(hash_)

    def goto(self, hash_=""):
        self.page.goto(self.url + hash_)
        self.page.wait_for_selector("body[data-ready='1']", timeout=30000)

    def settle(self):
        """Wait until the kernel being opened has been inflated and shown."""
        wait_until(self.page, "() => document.body.dataset.ready === '1' && !document.body.dataset.loading")

    def search(self, query):
        """Type a regex search and wait for its result (kernels are searched on demand)."""
        self.page.fill("#search", query)
        self.page.keyboard.press("Enter")
        wait_until(self.page, "() => document.getElementById('search-status').dataset.done === '1'", timeout=30)
        return self.page.locator("#search-status")

    def errors(self):
        return [m for m in self.messages if m.startswith(("error", "pageerror", "dialog"))]

    def active(self):
        return self.page.eval_on_selector("#passes .step.active", "e => Number(e.dataset.seq)")

    def visible_seqs(self):
        return self.page.eval_on_selector_all("#passes .step", "rows => rows.map(r => Number(r.dataset.seq))")

    def press(self, key):
        self.page.keyboard.press(key)

    def close(self):
        self.context.close()


def LTLines(text):
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines if text else []


def lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]
