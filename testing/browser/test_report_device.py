"""The device stage in the report, in Chromium: the kernel index shows each variant's registers,
spills, shared memory and occupancy as `lower-trace list --device` does; the device codegen step
shows ptxas' line and PTX and SASS panes whose lines carry the CUDA line nvdisasm's own records
give them (run here) and are lit with the user's line as the generated source's are."""

import base64
import json
import os
import re
import subprocess

import pytest

tilelang = pytest.importorskip("tilelang")
pytest.importorskip("tilelang.instrumentation")

import lower_trace  # noqa: E402
from device_sweep import missing_tools, traced_sweep  # noqa: E402
from lower_trace.analysis.origins import trace_origins  # noqa: E402
from lower_trace.integrations.nvcc.toolchain import find_tool  # noqa: E402
from report_fixtures import Page  # noqa: E402
from support import lower_trace_cli  # noqa: E402

if missing_tools():
    pytest.skip(missing_tools(), allow_module_level=True)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    trace = traced_sweep(tmp_path_factory.mktemp("device-page"), ampere=False)
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


def test_sass_and_ptx_panes_carry_nvdisasms_line_records_and_the_users_lines(browser, traced, tmp_path):
    kernel = traced.kernels[0]
    record = kernel.device_stage
    view = Page(browser, os.path.join(traced.path, "report.html"), f"#{kernel.kernel_id}")
    view.settle()
    view.page.locator(f'#passes .step[data-seq="{record.seq}"]').click()
    line = subprocess.run([lower_trace_cli(), "show", traced.path, "-k", kernel.kernel_id, "--device"], check=True, capture_output=True, text=True).stdout
    assert view.page.locator(".device-stage .device-line").inner_text() in line
    # nvdisasm -c -gi run here on the cubin the trace holds: per line, the last record naming the compiled file.
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(base64.b64decode(traced.read_snapshot(record.binary)))
    listing = subprocess.run([find_tool("nvdisasm"), "--print-code", "-gi", str(cubin)], check=True, capture_output=True, text=True).stdout
    expected, current = [], 0
    for text in listing.split("\n")[:-1] if listing.endswith("\n") else listing.split("\n"):
        for path, number in re.findall(r'"([^"]+)", line (\d+)', text):
            if os.path.basename(path) == record.source_name:
                current = int(number)
        instruction = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?[A-Z]", text)
        expected.append(current if instruction or text.lstrip().startswith("//##") else 0)
    sass = view.page.locator(".device-sass pre.lined > span.ln")
    shown = sass.evaluate_all("spans => spans.map((s) => [s.textContent, s.dataset.cu ? Number(s.dataset.cu) : 0])")
    assert [text for text, _ in shown] == (listing[:-1] if listing.endswith("\n") else listing).split("\n")
    instructions = [(cu, want) for (text, cu), want in zip(shown, expected, strict=True) if re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?[A-Z]", text)]
    assert instructions and all(cu == want for cu, want in instructions)
    # Point at an HGMMA whose CUDA line calls wgmma: the user's line that CUDA line comes from
    # (the source map, checked against marker comments in test_origins.py) lights in the source pane: the T.gemm.
    cuda = traced.read_snapshot(record.source).split("\n")
    origins = trace_origins(traced, kernel).sources[record.seq].origins
    index = next(i for i, (text, cu) in enumerate(shown) if "HGMMA" in text and cu and "wgmma" in cuda[cu - 1])
    hgmma = sass.nth(index)
    assert hgmma.get_attribute("title").startswith(f"CUDA line {shown[index][1]}")
    hgmma.hover()
    lit = view.page.locator(".source-pane .ln.o-hl")
    origin = origins[shown[index][1] - 1]
    assert lit.count() == 1 and lit.inner_text().strip().startswith(f"{origin.line} ") and "T.gemm(" in lit.inner_text()
    assert view.page.locator(".device-ptx pre.lined > span.ln[data-cu]").count() > 0
    assert not view.errors(), view.messages
    view.close()
