"""lower-trace in a notebook: a real Jupyter kernel runs a notebook headless (nbclient) that compiles
real TileLang kernels (one defined in a cell, one from kernels.py) under `with lower_trace.trace()`;
the outputs hold the run's own report in a frame (the run as the cell's value, show(), the
%%lower_trace magic), the cell's kernel source is in the trace, and a traced compile outside a
notebook never imports IPython."""

import json
import os
import subprocess
import sys

import pytest

import notebooks
from lower_trace.model import PassStatus
from lower_trace.render.notebook_frame import BASE, start_script
from lower_trace.store.reader import load_trace
from support import lower_trace_cli, pythonpath


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    return notebooks.execute(tmp_path_factory.mktemp("notebook"))


def _result(notebook, name, kind="execute_result"):
    found = [o for o in notebooks.outputs(notebook, name) if o["output_type"] == kind]
    assert len(found) == 1, notebooks.outputs(notebook, name)
    return found[0]


def _stderr(notebook, name):
    return "".join(o["text"] for o in notebooks.outputs(notebook, name) if o["output_type"] == "stream" and o["name"] == "stderr")


def _srcdoc(output):
    (frame,) = notebooks.frames(output["data"]["text/html"])
    return frame


def test_the_run_as_a_cells_value_is_its_own_report_in_a_frame(notebook):
    errors = [(i, o) for i, cell in enumerate(notebook.cells) for o in cell.outputs if o["output_type"] == "error"]
    assert [i for i, _ in errors] == [1 + list(notebooks.CELLS).index("show_bad")], errors  # the one cell meant to fail
    output = _result(notebook, "trace")
    report = notebooks.report_of(output)
    # Named after the notebook Jupyter says the kernel runs, not after ipykernel_launcher.
    assert os.path.basename(os.path.dirname(os.path.dirname(report))) == "tuning-gemm"
    frame = _srcdoc(output)
    assert "width:100%" in frame["style"] and "height:640px" in frame["style"]
    with open(report, encoding="utf-8") as file:
        page = file.read()
    assert frame["srcdoc"].replace(BASE, "", 1) == page  # the whole page, nothing lost to escaping
    # Nothing outside the frame: the output is the one element, its style inline.
    markup = output["data"]["text/html"]
    assert markup.startswith("<iframe ") and markup.endswith("</iframe>") and markup.count("<iframe") == 1
    assert "<style" not in markup.replace(frame["srcdoc"], "") and "<script" not in markup.split("srcdoc=")[0]
    names = [k.name for k in load_trace(os.path.dirname(report)).kernels]
    assert names == ["vector_add", "scale"]


def test_show_opens_the_frame_on_one_view(notebook):
    report = notebooks.report_of(_result(notebook, "trace"))
    trace = load_trace(os.path.dirname(report))
    add, scale = trace.kernels
    with open(report, encoding="utf-8") as file:
        page = file.read()
    diff = _result(notebook, "show_diff")
    assert notebooks.report_of(diff) == report
    # The diff view opens on a change of the kernel's own (a pass that ran no other); that it is the
    # largest the page's pass list counts is the browser test's to check.
    enclosing = {p.parent for p in add.passes}
    opened = _srcdoc(diff)["srcdoc"].split(BASE, 1)[1].split("</script>", 1)[0]
    seq = int(opened.split(f"#{add.kernel_id}/", 1)[1].split('"', 1)[0])
    record = next(p for p in add.passes if p.seq == seq)
    assert record.status is PassStatus.CHANGED and seq not in enclosing
    assert _srcdoc(diff)["srcdoc"].replace(BASE + start_script(f"{add.kernel_id}/{seq}"), "", 1) == page
    # step= opens a named pass: its first run that changed the IR.
    bind = next(p for p in add.passes if p.name == "tirx.BindTarget" and p.status is PassStatus.CHANGED)
    assert _srcdoc(_result(notebook, "show_step"))["srcdoc"].replace(BASE + start_script(f"{add.kernel_id}/{bind.seq}"), "", 1) == page
    # A wrong argument is one line in the notebook, no traceback through lower-trace's code.
    (error,) = [o for o in notebooks.outputs(notebook, "show_bad") if o["output_type"] == "error"]
    assert error["traceback"] == ["ShowError: view must be one of diff, source, timing, device, launches, not 'ir'"]
    source = _result(notebook, "show_source")
    device_codegen = next(step for step in scale.codegen if step.role == "device")
    frame = _srcdoc(source)
    assert frame["srcdoc"].replace(BASE + start_script(f"{scale.kernel_id}/{device_codegen.seq}"), "", 1) == page
    assert "height:50vh" in frame["style"]


def test_show_says_what_it_takes(notebook):
    import lower_trace

    report = notebooks.report_of(_result(notebook, "trace"))
    run_dir = os.path.dirname(report)
    with pytest.raises(ValueError, match=r"^view must be one of diff, source, timing, device, launches, not 'ir'$"):
        lower_trace.show(run_dir, view="ir")
    with pytest.raises(ValueError, match=r"^no kernel 'gemm' in this run; its kernels: vector_add, scale \(or their ids k1..k2\)$"):
        lower_trace.show(run_dir, kernel="gemm")
    with pytest.raises(ValueError, match=r"^kernel 'scale' has no device stage in this run"):
        lower_trace.show(report, kernel="scale", view="device")  # a C kernel: nvcc never ran
    timing = lower_trace.show(run_dir, kernel="k2", view="timing")
    assert timing.start == "k2/timing" and repr(timing) == f"lower-trace report: {report}#k2/timing"


def test_a_run_still_open_or_without_a_report_says_so(notebook):
    still_open = _result(notebook, "notes", "display_data")["data"]["text/plain"]
    assert still_open.startswith("lower-trace: the run is still open (0 kernels so far)")
    terminal = _result(notebook, "notes")["data"]
    assert terminal["text/plain"] == "lower-trace: this run writes no HTML report (terminal mode: its diffs are printed above)"
    assert "<iframe" not in terminal["text/html"]


def test_the_cell_magic_traces_the_cell(notebook):
    shown = _result(notebook, "magic_html", "display_data")
    report = notebooks.report_of(shown)
    assert report != notebooks.report_of(_result(notebook, "trace"))
    with open(report, encoding="utf-8") as file:
        assert _srcdoc(shown)["srcdoc"].replace(BASE, "", 1) == file.read()
    assert [k.name for k in load_trace(os.path.dirname(report)).kernels] == ["vector_add"]
    # Terminal mode: the diffs on stderr, no frame.
    terminal = notebooks.outputs(notebook, "magic_terminal")
    assert "== lower-trace: kernel k1 scale" in _stderr(notebook, "magic_terminal")
    assert not any("<iframe" in o.get("data", {}).get("text/html", "") for o in terminal)
    # A bad option: one line with the usage.
    lines = _stderr(notebook, "magic_bad").splitlines()
    said = "argument --mode: invalid choice: 'bogus' (choose from 'html', 'both', 'terminal')"
    assert lines == [f"UsageError: {said}; usage: %%lower_trace [--mode terminal|html|both] [--dir DIR]"]


def test_a_kernel_defined_in_a_cell_has_its_source_in_the_trace(notebook):
    cell_file = json.loads(_stdout(notebook, "define"))["cell_file"]
    assert not os.path.exists(cell_file)  # only in the kernel's linecache
    run_dir = os.path.dirname(notebooks.report_of(_result(notebook, "trace")))
    stored = load_trace(run_dir).source_text(cell_file)
    assert stored is not None and stored.rstrip("\n") == notebooks.DEFINE
    # where: the cell's line `C[i] = A[i] + B[i]` in the final TIR and the generated C.
    line = notebooks.DEFINE.splitlines().index("            C[i] = A[i] + B[i]") + 1
    done = subprocess.run([lower_trace_cli(), "where", run_dir, "-k", "vector_add", f"{cell_file}:{line}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "final TIR" in done.stdout and "C_1[i] = A_1[i] + B_1[i]" in done.stdout and "C[i] = (A[i] + B[i]);" in done.stdout


def _stdout(notebook, name):
    return "".join(o["text"] for o in notebooks.outputs(notebook, name) if o["output_type"] == "stream" and o["name"] == "stdout")


def test_the_notebook_ran_on_ipykernel(notebook):
    seen = json.loads(_stdout(notebook, "modules"))
    assert seen["argv0"].endswith("ipykernel_launcher.py") and seen["ipython"]


TRACED_COMPILE = """
import sys
import lower_trace
lower_trace.enable(mode="both", trace_dir=sys.argv[1])
import tilelang, kernels
tilelang.lower(kernels.vector_add_c(), target="c")
lower_trace.disable()
assert lower_trace.show and lower_trace.current_run() is None  # the names are there, lazily
print(sorted(name for name in sys.modules if name.split(".")[0] in ("IPython", "ipykernel", "jupyter_client") or name == "lower_trace.notebook"))
"""


def test_a_traced_compile_outside_a_notebook_imports_no_ipython(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "PYTEST_"))}
    env["PYTHONPATH"] = pythonpath()
    done = subprocess.run([sys.executable, "-c", TRACED_COMPILE, str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "traced 1 kernel" in done.stderr
    assert done.stdout.splitlines()[-1] == "['lower_trace.notebook']"  # show() was looked up; IPython never imported
