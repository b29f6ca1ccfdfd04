"""Traces the report tests open: one real multi-kernel run with a failure, one hostile."""

import kernels
import lower_trace
from lower_trace.model import ErrorInfo, PassRecord, PassStatus, RunInfo, to_json
from lower_trace.render.html import write_report
from lower_trace.store import TraceWriter, digest_of

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
        PassRecord(kernel="k1", seq=0, name=EVIL_NAME, status=PassStatus.CHANGED, phase=EVIL_NAME, caller=EVIL_NAME, before=digest_of(before), after=digest_of(after)),
        PassRecord(kernel="k1", seq=1, name="tl.Evil", status=PassStatus.FAILED, phase="p", before=digest_of(after), error=ErrorInfo(EVIL_NAME, EVIL_NAME, EVIL_IR)),
    ]
    for record in records:
        writer.append("pass", to_json(record))
    writer.append("kernel_end", {"kernel_id": "k1", "status": "failed", "error": to_json(ErrorInfo(EVIL_NAME, EVIL_NAME))})
    writer.close()
    return write_report(run_dir)
