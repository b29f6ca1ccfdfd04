"""A real notebook, run headless on a real Jupyter kernel (nbclient, the venv's python3 kernel):
kernels defined in a cell and taken from kernels.py, traced with `with lower_trace.trace()`, the
run shown as the cell's value, show(..., view=...), and the %%lower_trace magic. Shared by
integration/test_notebook.py and browser/test_notebook_page.py (which converts it with nbconvert)."""

import html.parser
import os
import re

import nbclient
import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from support import pythonpath

# The kernel lives in this cell, so its source is only in linecache (IPython's made-up file name).
DEFINE = '''import inspect, json, sys
import tilelang
import tilelang.language as T
import lower_trace
import kernels

@T.prim_func
def vector_add(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
    with T.Kernel(1) as _:
        for i in T.serial(64):
            C[i] = A[i] + B[i]

print(json.dumps({"cell_file": inspect.currentframe().f_code.co_filename}))'''

CELLS = {
    "define": DEFINE,
    "trace": """with lower_trace.trace(trace_dir=TRACE_DIR) as run:
    add = tilelang.compile(vector_add, target="c", execution_backend="cython")
    scale = tilelang.compile(kernels.scale_c(), target="c", execution_backend="cython")
run""",
    "show_diff": 'lower_trace.show(run, kernel="vector_add", view="diff")',
    "show_source": 'lower_trace.show(run, kernel="scale", view="source", height="50vh")',
    "show_step": 'lower_trace.show(run, kernel="vector_add", step="tirx.BindTarget")',
    "show_bad": 'lower_trace.show(run, kernel="vector_add", view="ir")',
    "notes": """from IPython.display import display
with lower_trace.trace(trace_dir=TRACE_DIR) as still_open:
    display(still_open)
with lower_trace.trace(mode="terminal") as terminal_run:
    pass
terminal_run""",
    "load_ext": "%load_ext lower_trace",
    "magic_html": """%%lower_trace --dir $TRACE_DIR
tilelang.lower(vector_add, target="c")""",
    "magic_terminal": """%%lower_trace --mode terminal
tilelang.lower(kernels.scale_c(), target="c")""",
    "magic_bad": "%%lower_trace --mode bogus\n1",
    "modules": 'print(json.dumps({"argv0": sys.argv[0], "ipython": "IPython" in sys.modules}))',
}


NOTEBOOK = "tuning-gemm.ipynb"  # the notebook the kernel is told it runs (its runs: tuning-gemm/)


def build(trace_dir):
    first = new_code_cell(f"TRACE_DIR = {os.fspath(trace_dir)!r}")
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return new_notebook(cells=[first, *(new_code_cell(source) for source in CELLS.values())], metadata={"kernelspec": kernelspec})


def execute(folder):
    """The notebook run in folder (its working directory) on the python3 kernel; saved as run.ipynb."""
    trace_dir = os.path.join(folder, "traces")
    notebook = build(trace_dir)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
    env["PYTHONPATH"] = pythonpath()  # kernels.py
    env["JPY_SESSION_NAME"] = os.path.join(os.fspath(folder), NOTEBOOK)  # as Jupyter Server tells a kernel its notebook
    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=600, allow_errors=True, resources={"metadata": {"path": os.fspath(folder)}})
    client.execute(env=env)
    nbformat.write(notebook, os.path.join(folder, "run.ipynb"))
    return notebook


def outputs(notebook, name):
    """The outputs of the cell CELLS[name]."""
    index = 1 + list(CELLS).index(name)
    return notebook.cells[index].outputs


class _Frames(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.frames = []

    def handle_starttag(self, tag, attrs):
        if tag == "iframe":
            self.frames.append(dict(attrs))


def frames(markup):
    """The <iframe> elements of an output's HTML, their attributes unescaped as a browser does."""
    parser = _Frames()
    parser.feed(markup)
    parser.close()
    return parser.frames


def report_of(output):
    """The report path an output names in its text/plain (lower-trace report: PATH[#hash])."""
    found = re.match(r"lower-trace report: (.+?)(#.*)?$", output["data"]["text/plain"])
    assert found, output["data"]["text/plain"]
    return found.group(1)
