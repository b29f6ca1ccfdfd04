"""The device stage in the report, in Chromium: the kernel index shows each variant's registers,
spills, shared memory and occupancy as `lower-trace list --device` does; the device codegen step
shows ptxas' line, a PTX pane whose lines carry their CUDA line and a SASS pane of instructions, each
with the CUDA line nvdisasm's own records give it (run here) as a column, an HGMMA nvcc puts on a
line that cannot have made it with nvcc's line beside the one it was moved to, lit with the user's
line as the generated source's are."""

import base64
import json
import os
import re
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace  # noqa: E402
from device_sweep import missing_tools, shared_sweep  # noqa: E402
from lower_trace.analysis.origins import trace_origins  # noqa: E402
from lower_trace.integrations.nvcc.toolchain import find_tool  # noqa: E402
from report_fixtures import Page  # noqa: E402
from support import lower_trace_cli  # noqa: E402

if missing_tools():
    pytest.skip(missing_tools(), allow_module_level=True)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    trace = shared_sweep(tmp_path_factory, "device-page")  # the integration tier's sweep, built once
    subprocess.run([lower_trace_cli(), "device", trace], check=True, capture_output=True, timeout=600)  # the SASS; rewrites the report
    return lower_trace.load_trace(trace)


def test_the_index_shows_what_list_device_says(browser, traced):
    rows = json.loads(subprocess.run([lower_trace_cli(), "list", traced.path, "--device", "--json"], check=True, capture_output=True, text=True).stdout)
    view = Page(browser, os.path.join(traced.path, "report.html"))
    for row in rows["kernels"]:
        cells = view.page.locator(f'#kernels .kernel-row[data-kernel="{row["kernel"]}"] .device-cells')
        text = cells.inner_text()
        resources = row["resources"]
        assert f"{resources['registers']} regs" in text
        assert f"{resources['shared_static'] + row['launch']['dynamic_shared']} B smem" in text
        spills = resources["spill_stores"]
        assert (f"spills {spills}/{resources['spill_loads']} B" in text) == bool(spills)
        assert cells.locator(".spilling").count() == (1 if spills else 0)  # the spilling variant stands out
        assert f"{row['occupancy']['warps_per_sm']} warps/SM" in text
    assert not view.errors(), view.messages
    view.close()


INSTRUCTION = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?[A-Z]")


def test_sass_pane_shows_instructions_with_their_cuda_line_and_ptx_lines_carry_theirs(browser, traced, tmp_path):
    kernel = traced.kernels[0]
    record = kernel.device_stage
    view = Page(browser, os.path.join(traced.path, "report.html"), f"#{kernel.kernel_id}")
    view.settle()
    view.page.locator(f'#passes .step[data-seq="{record.seq}"]').click()
    line = subprocess.run([lower_trace_cli(), "show", traced.path, "-k", kernel.kernel_id, "--device"], check=True, capture_output=True, text=True).stdout
    assert view.page.locator(".device-stage .device-line").inner_text() in line
    # nvdisasm -c -gi run here on the cubin the trace holds: per instruction, nvcc's line (the last
    # record naming the compiled file).
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(base64.b64decode(traced.read_snapshot(record.binary)))
    listing = subprocess.run([find_tool("nvdisasm"), "--print-code", "-gi", str(cubin)], check=True, capture_output=True, text=True).stdout
    expected, current = [], 0
    for text in listing.split("\n"):
        for path, number in re.findall(r'"([^"]+)", line (\d+)', text):
            if os.path.basename(path) == record.source_name:
                current = int(number)
        if INSTRUCTION.match(text):
            expected.append((" ".join(text.split()), current))
    pane = view.page.locator(".device-sass")
    assert "//## File" not in pane.inner_text()  # nvdisasm's records are a column, not rows
    sass = pane.locator("pre.lined > span.ln")
    rows = sass.evaluate_all(
        """spans => spans.map((s) => [s.querySelector('.sass-text').textContent, s.querySelector('.sass-cu').textContent,
            s.querySelector('.sass-nvcc') ? s.querySelector('.sass-nvcc').textContent : null, s.dataset.cu ? Number(s.dataset.cu) : 0])"""
    )
    instructions = [(i, row) for i, row in enumerate(rows) if INSTRUCTION.match(row[0])]
    assert [" ".join(text.split()) for _, (text, *_rest) in instructions] == [text for text, _ in expected]
    cuda = traced.read_snapshot(record.source).split("\n")
    moved = []
    for (index, (text, column, nvcc, cu)), (_, want) in zip(instructions, expected, strict=True):
        if "HGMMA" in text and "wgmma" not in cuda[want - 1]:  # nvcc's line cannot have made it: moved, nvcc's beside it
            assert nvcc == f" (nvcc: {want})" and "wgmma" in cuda[cu - 1] and column.startswith(f"{record.source_name}:{cu} (nvcc: {want})"), (text, column)
            moved.append(index)
        else:  # each instruction row has its line column: nvcc's line, as nvdisasm gives it
            assert cu == want and nvcc is None and column.strip() == f"{record.source_name}:{want}", (text, column, want)
    assert moved  # nvcc 13 puts some of this GEMM's HGMMAs on an mbarrier arrive or the loop head
    # Point at a moved HGMMA: the user's line its CUDA line comes from (the source map, checked
    # against marker comments in test_origins.py) lights in the source pane: the T.gemm.
    origins = trace_origins(traced, kernel).sources[record.seq].origins
    hgmma = sass.nth(moved[0])
    cu = rows[moved[0]][3]
    assert hgmma.get_attribute("title").startswith(f"CUDA line {cu}\nnvcc's line table says line ")
    hgmma.scroll_into_view_if_needed()
    hgmma.hover()
    lit = view.page.locator(".source-pane .ln.o-hl")
    origin = origins[cu - 1]
    assert lit.count() == 1 and lit.inner_text().strip().startswith(f"{origin.line} ") and "T.gemm(" in lit.inner_text()
    assert view.page.locator(".device-ptx pre.lined > span.ln[data-cu]").count() > 0
    assert not view.errors(), view.messages
    view.close()


def test_a_device_stage_added_at_the_close_shows_as_any_other(browser, tmp_path_factory):
    """Pinned to one core, ptxas' report waits for the run's close and reaches the page as late
    blocks: the index's columns and the device step's ptxas line are what `lower-trace list
    --device` and `show --device` say."""
    loaded = lower_trace.load_trace(shared_sweep(tmp_path_factory, "late-device", one_core=True))  # the integration tier's
    trace = loaded.path
    rows = json.loads(subprocess.run([lower_trace_cli(), "list", trace, "--device", "--json"], check=True, capture_output=True, text=True).stdout)
    view = Page(browser, os.path.join(trace, "report.html"))
    for row in rows["kernels"]:
        text = view.page.locator(f'#kernels .kernel-row[data-kernel="{row["kernel"]}"] .device-cells').inner_text()
        assert f"{row['resources']['registers']} regs" in text and f"{row['occupancy']['warps_per_sm']} warps/SM" in text
    kernel = loaded.kernels[0]
    view.goto(f"#{kernel.kernel_id}")
    view.settle()
    view.page.locator(f'#passes .step[data-seq="{kernel.device_stage.seq}"]').click()
    line = subprocess.run([lower_trace_cli(), "show", trace, "-k", kernel.kernel_id, "--device"], check=True, capture_output=True, text=True).stdout
    assert view.page.locator(".device-stage .device-line").inner_text() in line
    assert not view.errors(), view.messages
    view.close()
