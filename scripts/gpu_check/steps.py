"""The GPU check's steps, run inside the check's venv (TileLang and lower-trace from the wheelhouse):

    python steps.py --target cuda --work DIR     # on the GPU machine: device 0
    python steps.py --target c --work DIR        # the dry run: gcc and CPU tensors; CUDA compile-only

Each step prints `PASS <step>: <what was seen>` or `FAIL <step>: <one-line reason>`; the exit status
is the number of failed steps. The kernels are the test suite's (testing/kernels.py).
"""

from __future__ import annotations

import argparse
import base64
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "testing"), HERE]

import cubin  # noqa: E402
import tilelang  # noqa: E402
import torch  # noqa: E402  (after the paths: kernels and cubin live beside the check)
from tilelang.contrib import nvcc as tl_nvcc  # noqa: E402

import kernels  # noqa: E402
import lower_trace  # noqa: E402

BISECT_CHECK = os.path.join(HERE, "bisect_check.py")


class Fail(Exception):
    """A step's one-line reason for failing."""


# The edits: one line of the generated source, changed so that the output doubles exactly.
# CUDA (the GEMM's epilogue): the float2 read from the accumulator before the cast to half is
# doubled; C (scale): the stored value is doubled.
EDITS = {
    "cuda": (re.compile(r"^(\s*)float2 (\w+) = \*\(float2\*\)\(C_local \+ [^;]*\);$", re.MULTILINE), r"\g<0> \2.x *= 2.0f; \2.y *= 2.0f;"),
    "c": (re.compile(r"^(\s*)(C\[[^\]]+\]) = (.*);$", re.MULTILINE), r"\1\2 = (\3) * 2.000000e+00f;"),
}


def edit(path: str, target: str) -> None:
    """The target's edit (EDITS), made in the working copy at path: its line must occur once."""
    pattern, replacement = EDITS[target]
    edited, count = pattern.subn(replacement, read(path))
    if count != 1:
        raise Fail(f"the edit's line occurs {count} times in {path} (wanted once)")
    with open(path, "w") as out:
        out.write(edited)


class Check:
    def __init__(self, target: str, work: str) -> None:
        self.target, self.work = target, work
        self.traces = os.path.join(work, "traces")
        self.failed = 0
        self.state: dict[str, Any] = {}
        self.seen: dict[int, list[bytes]] = {}  # a trace's id -> the cubins TileLang's backend got in that run
        if target == "cuda":
            major, minor = torch.cuda.get_device_capability(0)
            self.arch = f"sm_{major}{minor}{'a' if major >= 9 else ''}"
            self.device = "cuda:0"
        else:
            self.arch, self.device = "sm_90a", "cpu"  # the CUDA compiles of the dry run (compile-only)

    def step(self, name: str, body: Callable[[], str]) -> None:
        started = time.perf_counter()
        try:
            said = body()
        except Fail as exc:
            self.failed += 1
            print(f"FAIL {name}: {exc}", flush=True)
            return
        except Exception as exc:
            self.failed += 1
            text = " ".join(str(exc).split())[:300]
            print(f"FAIL {name}: {type(exc).__name__}: {text}", flush=True)
            return
        print(f"PASS {name}: {said} ({time.perf_counter() - started:.1f} s)", flush=True)

    # --- compiling and running ----------------------------------------------------------------

    def cuda_target(self) -> dict[str, str]:
        return {"kind": "cuda", "arch": self.arch}

    def compile(self, func: Any, traced: bool, cuda: bool) -> tuple[Any, Any]:
        """(kernel, the trace of its run or None); for CUDA, the cubins TileLang's backend got."""
        target: Any = self.cuda_target() if cuda else "c"
        extra = {} if cuda else {"execution_backend": "cython"}
        seen: list[bytes] = []
        if not traced:
            return tilelang.compile(func, target=target, **extra), None
        with lower_trace.trace(mode="trace", trace_dir=self.traces) as run:
            # A spy over what lower-trace installed: the bytes TileLang's CUDA backend receives are
            # the ones it loads (tilelang/cuda/backend.py calls nvcc.compile_cuda by attribute).
            inner = tl_nvcc.compile_cuda

            def spy(*args: Any, **kwargs: Any) -> Any:
                binary = inner(*args, **kwargs)
                seen.append(bytes(binary))
                return binary

            tl_nvcc.compile_cuda = spy
            try:
                kernel = tilelang.compile(func, target=target, **extra)
            finally:
                tl_nvcc.compile_cuda = inner
        trace = lower_trace.load_trace(run.run_dir)
        self.seen[id(trace)] = seen
        return kernel, trace

    def gemm_inputs(self) -> tuple[Any, Any]:
        """Small integers: every product and sum (|C| <= 2048, and 2C) is exact in fp16 and fp32, so
        the GEMM must equal torch's exactly and the edited one must give exactly twice that."""
        gen = torch.Generator().manual_seed(0)
        a = torch.randint(-2, 3, (512, 512), generator=gen).half().to(self.device)
        b = torch.randint(-2, 3, (512, 512), generator=gen).half().to(self.device)
        return a, b

    def run_gemm(self, kernel: Any) -> Any:
        a, b = self.gemm_inputs()
        c = torch.zeros(512, 512, dtype=torch.float16, device=self.device)
        kernel(a, b, c)
        torch.cuda.synchronize()
        return c

    def run_scale(self, kernel: Any) -> Any:
        a = torch.arange(64, dtype=torch.float32) - 20.5
        c = torch.zeros(64, dtype=torch.float32)
        kernel(a, c)
        return c

    # --- the steps ----------------------------------------------------------------------------

    def traced_runs(self) -> str:
        if self.target == "cuda":
            kernel, trace = self.compile(kernels.gemm(512, 512, 512), traced=True, cuda=True)
            c = self.run_gemm(kernel)
            a, b = self.gemm_inputs()
            want = a.float() @ b.float()
            error = (c.float() - want).abs().max().item()
            if not torch.equal(c.float(), want):
                raise Fail(f"the traced GEMM's result differs from torch's A @ B by up to {error:.3g}")
            self.state.update(first=c, trace=trace)
            return f"gemm 512x512x512 on {self.arch}, traced ({len(trace.kernels[0].passes)} passes), equal to torch's A @ B (integer inputs: exact)"
        kernel, trace = self.compile(kernels.scale_c(factor=3.0), traced=True, cuda=False)
        c = self.run_scale(kernel)
        want = (torch.arange(64, dtype=torch.float32) - 20.5) * 3.0
        if not torch.equal(c, want):
            raise Fail(f"the traced C kernel computed {c[:4].tolist()}..., torch {want[:4].tolist()}...")
        self.state.update(first=c, trace=trace)
        return f"scale (C, gcc) traced ({len(trace.kernels[0].passes)} passes), equal to torch's A * 3"

    def flash_attention(self) -> str:
        batch, heads, seq, dim = 1, 4, 256, 64
        kernel, trace = self.compile(kernels.flash_attention(batch, heads, seq, dim), traced=True, cuda=True)
        gen = torch.Generator().manual_seed(1)
        q, k, v = (torch.randn(batch, seq, heads, dim, generator=gen).half().to(self.device) for _ in range(3))
        out = torch.zeros_like(q)
        kernel(q, k, v, out)
        torch.cuda.synchronize()
        want = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2).float(), k.transpose(1, 2).float(), v.transpose(1, 2).float())
        want = want.transpose(1, 2)
        error = (out.float() - want).abs().max().item()
        if not torch.allclose(out.float(), want, atol=2e-2, rtol=2e-2):
            raise Fail(f"flash attention differs from torch's scaled_dot_product_attention by up to {error:.3g}")
        return f"flash attention {batch}x{seq}x{heads}x{dim} traced ({len(trace.kernels[0].passes)} passes), max error {error:.3g}"

    def edit_and_rerun(self) -> str:
        if "first" not in self.state:
            raise Fail("the traced run failed, so there is no working copy to edit")
        name = "gemm.cu" if self.target == "cuda" else "scale.c"
        copies = glob.glob(os.path.join(self.traces, "*", "edits", name))
        if len(copies) != 1:
            raise Fail(f"expected one working copy {name} under {self.traces}, found {len(copies)}")
        edit(copies[0], self.target)
        if self.target == "cuda":
            kernel, trace = self.compile(kernels.gemm(512, 512, 512), traced=True, cuda=True)
            c = self.run_gemm(kernel)
        else:
            kernel, trace = self.compile(kernels.scale_c(factor=3.0), traced=True, cuda=False)
            c = self.run_scale(kernel)
        device = [record for record in trace.kernels[0].codegen if record.role == "device"]
        statuses = [str(getattr(record.edit_status, "value", record.edit_status)) for record in device]
        if statuses != ["PATCHED"]:
            raise Fail(f"the rerun's device codegen says {statuses}, not PATCHED")
        first = self.state["first"]
        if not torch.equal(c, first * 2):
            raise Fail(f"the edited kernel computed {c.flatten()[:3].tolist()}..., not twice {first.flatten()[:3].tolist()}...")
        func = kernels.gemm(512, 512, 512) if self.target == "cuda" else kernels.scale_c(factor=3.0)
        untraced, _ = self.compile(func, traced=False, cuda=self.target == "cuda")
        again = self.run_gemm(untraced) if self.target == "cuda" else self.run_scale(untraced)
        if not torch.equal(again, first):
            raise Fail("the untraced run's numbers are not the first run's: the edit leaked")
        said = f"{os.path.basename(copies[0])} edited (output x2): PATCHED, every number exactly twice the first run's; untraced: the first run's numbers"
        if self.target != "cuda":
            said += "; " + self.cuda_edit_compiles()
        return said

    def cuda_edit_compiles(self) -> str:
        """The dry run's half of the CUDA edit: the GEMM's epilogue edit applies and nvcc compiles it."""
        _kernel, first = self.compile(kernels.gemm(512, 512, 512), traced=True, cuda=True)
        copies = glob.glob(os.path.join(self.traces, "*", "edits", "gemm.cu"))
        generated = read(copies[0])
        edit(copies[0], "cuda")
        _kernel, second = self.compile(kernels.gemm(512, 512, 512), traced=True, cuda=True)
        statuses = [str(getattr(r.edit_status, "value", r.edit_status)) for r in second.kernels[0].codegen if r.role == "device"]
        records = [r for r in second.kernels[0].device if r.binary]
        if statuses != ["PATCHED"] or not records or not records[-1].edited:
            raise Fail(f"the edited gemm.cu was not compiled: {statuses}, device records {[r.edited for r in records]}")
        if records[-1].binary == first.kernels[0].device[-1].binary:
            raise Fail("the edited gemm.cu gave the same cubin as the generated one")
        with open(copies[0], "w") as out:
            out.write(generated)  # back to TileLang's own source (SYNCED) for the next steps
        return "CUDA compile-only: gemm.cu's epilogue edit applies, PATCHED, nvcc built another cubin"

    def device_attributes(self) -> str:
        said = []
        shapes = (
            ("gemm 128x128x32 tiles", kernels.gemm(512, 512, 512)),
            ("gemm 128x256x32 tiles (spills)", kernels.gemm(1024, 1024, 1024, 128, 256, 32)),
        )
        for label, func in shapes:
            if self.target == "cuda" and "trace" in self.state and label.startswith("gemm 128x128"):
                trace = self.state["trace"]  # the kernel that ran in the first step
            else:
                _kernel, trace = self.compile(func, traced=True, cuda=True)
            said.append(f"{label}: {self.compare_device(trace)}")
        if self.target != "cuda":
            said.append("the driver comparison needs a GPU: not run here")
        return "; ".join(said)

    def compare_device(self, trace: Any) -> str:
        records = [record for record in trace.kernels[0].device if record.binary]
        if not records:
            raise Fail("the traced compile has no device record with a cubin (is nvcc there? TL_LOWER_TRACE_DEVICE=off?)")
        record = records[-1]
        if record.error:
            raise Fail(f"the device stage says: {record.error}")
        binary = base64.b64decode(trace.read_snapshot(record.binary))
        seen = self.seen.get(id(trace), [])
        if hashlib.sha256(binary).digest() not in [hashlib.sha256(blob).digest() for blob in seen]:
            raise Fail(f"the recorded cubin is not the one TileLang's backend received ({len(seen)} seen)")
        resources = record.function()
        if resources is None:
            raise Fail("the device record lists no function")
        recorded = {"registers": resources.registers, "local_bytes": resources.stack, "shared_static": resources.shared_static}
        own = cubin.cubin_attributes(binary, resources.function)
        sources = {"the cubin's own records": own}
        if self.target == "cuda":
            driver = cubin.driver_attributes(binary, resources.function)
            sources["the CUDA driver"] = driver
            want = int(self.arch[3:5])
            if driver["binary_version"] != want:
                raise Fail(f"the driver says the cubin is for sm_{driver['binary_version']}, the record {record.arch}")
        for source, values in sources.items():
            wrong = [f"{key} {recorded[key]} vs {values[key]}" for key in recorded if values[key] != recorded[key]]
            if wrong:
                raise Fail(f"the device stage and {source} disagree on {resources.function}: {', '.join(wrong)} (recorded vs {source})")
        spills = f"{resources.spill_stores}/{resources.spill_loads} B spill st/ld"
        if (resources.spill_stores or resources.spill_loads) and not recorded["local_bytes"]:
            raise Fail(f"spills recorded ({spills}) but no local frame")
        return (f"{resources.registers} regs, {resources.stack} B local frame ({spills}), {resources.shared_static} B static smem "
                f"= {' = '.join(sources)}")  # fmt: skip

    def launches(self) -> str:
        """Issue 40 end to end: a launch kept with its tensors, its repro run (and an edit of it caught),
        a regress --run that sees the injected miscompile as "results differ", bisect --launch naming it."""
        cli = os.path.join(os.path.dirname(sys.executable), "lower-trace")
        corpus = [sys.executable, BISECT_CHECK, "--target", self.target, "--arch", self.arch]
        work = os.path.join(self.work, "launches")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "INJECT_"))}
        traced = dict(env, TL_LOWER_TRACE="trace", TL_LOWER_TRACE_DIR=os.path.join(work, "traces"), TL_LOWER_TRACE_LAUNCHES="data")
        done = subprocess.run(corpus, env=traced, capture_output=True, text=True, timeout=600)
        runs = glob.glob(os.path.join(work, "traces", "*", "run-*"))
        if done.returncode != 0 or len(runs) != 1:
            raise Fail(f"the traced corpus exited {done.returncode} with {len(runs)} runs: {' '.join(done.stderr.split()[-20:])}")
        said = [self.launch_repro(cli, runs[0], work, env)]
        said.append(self.regress_results(cli, corpus, work, env))
        said.append(self.bisect_launch(cli, runs[0], work, env))
        return "; ".join(said)

    def launch_repro(self, cli: str, run: str, work: str, env: dict[str, str]) -> str:
        folder = os.path.join(work, "repro")
        command = [cli, "repro", run, "--launch", "k1", "--rebuild", "generated", "-o", folder]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise Fail(f"repro --launch exited {done.returncode}: {done.stderr.strip()[-300:]}")
        ran = subprocess.run([sys.executable, os.path.join(folder, "run.py")], env=env, capture_output=True, text=True, timeout=600)
        if ran.returncode != 0:
            raise Fail(f"the launch's repro exited {ran.returncode}: {' '.join(ran.stdout.split()[-30:])}")
        (source,) = glob.glob(os.path.join(folder, "generated-device.*"))
        text = read(source)
        with open(source, "w") as out:
            out.write(text.replace("3.000000e+00f", "4.000000e+00f", 1))
        edited = subprocess.run([sys.executable, os.path.join(folder, "run.py")], env=env, capture_output=True, text=True, timeout=600)
        if edited.returncode != 1 or "C: differs at" not in edited.stdout:
            raise Fail(f"the repro of the edited source (3.0 -> 4.0) exited {edited.returncode}: {' '.join(edited.stdout.split()[-30:])}")
        return "repro --launch (generated) matches bitwise; its edit (3.0 -> 4.0) is caught (exit 1)"

    def regress_results(self, cli: str, corpus: list[str], work: str, env: dict[str, str]) -> str:
        head = os.path.join(work, "buggy-python")
        with open(head, "w") as out:
            out.write(f"#!/bin/sh\nexport INJECT_MISCOMPILE=VectorizeLoop\nexec {sys.executable} \"$@\"\n")
        os.chmod(head, 0o755)
        # "python": regress runs each side's own interpreter for it
        command = [cli, "regress", "--run", "--head", head, "--dir", os.path.join(work, "regress"), "--json", "--", "python", *corpus[1:]]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1500)
        try:
            kernels_found = json.loads(done.stdout)["kernels"]
        except (ValueError, KeyError):
            raise Fail(f"regress --run exited {done.returncode}: {' '.join(done.stderr.split()[-30:])}") from None
        verdicts = [k["verdict"] for k in kernels_found]
        if done.returncode != 1 or verdicts != ["results differ"]:
            raise Fail(f"regress --run exited {done.returncode} with verdicts {verdicts}, not 'results differ'")
        return f"regress --run: results differ ({kernels_found[0]['evidence'][0][:90]})"

    def bisect_launch(self, cli: str, run: str, work: str, env: dict[str, str]) -> str:
        site = os.path.join(work, "site")
        os.makedirs(site, exist_ok=True)
        with open(os.path.join(site, "sitecustomize.py"), "w") as out:
            out.write(SITECUSTOMIZE.format(testing=os.path.join(ROOT, "testing")))
        buggy = dict(env, INJECT_MISCOMPILE="VectorizeLoop", PYTHONPATH=os.pathsep.join(filter(None, (site, env.get("PYTHONPATH", "")))))
        command = [cli, "bisect", "--launch", f"{run}:k1", "--work", os.path.join(work, "bisect"), "--color", "never", "--timeout", "300"]
        done = subprocess.run(command, env=buggy, capture_output=True, text=True, timeout=1500)
        line = next((text for text in done.stdout.splitlines() if text.startswith("first bad pass:")), "")
        if done.returncode != 0 or "tl.BuggyConstantFold" not in line:
            raise Fail(f"bisect --launch exited {done.returncode}: {line or ' '.join((done.stdout + done.stderr).split()[-40:])}")
        return f"bisect --launch: {line.split(' of kernel')[0]}"

    def bisect(self) -> str:
        check = [sys.executable, BISECT_CHECK, "--target", self.target, "--arch", self.arch]
        for inject, want in (("", 0), ("VectorizeLoop", 3)):
            done = subprocess.run([*check, "--inject", inject], capture_output=True, text=True, timeout=600)
            if done.returncode != want:
                tail = " ".join((done.stdout + done.stderr).split()[-30:])
                raise Fail(f"the check{' with the injected pass' if inject else ''} exits {done.returncode}, not {want}: {tail}")
        cli = os.path.join(os.path.dirname(sys.executable), "lower-trace")
        work = os.path.join(self.work, "bisect")
        command = [cli, "bisect", "--work", work, "--color", "never", "--timeout", "300", "--", *check, "--inject", "VectorizeLoop"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=1500)
        out = done.stdout + done.stderr
        line = next((line for line in out.splitlines() if line.startswith("first bad pass:")), "")
        if done.returncode != 0 or "tl.BuggyConstantFold" not in line:
            raise Fail(f"bisect exited {done.returncode}: {line or ' '.join(out.split()[-40:])}")
        runs = sum(1 for text in out.splitlines() if text.startswith("run "))
        return f"{line.split(' of kernel')[0]} ({runs} runs; the pass turns 3.0 into 3.5)"


SITECUSTOMIZE = """
import os, sys
if os.environ.get("INJECT_MISCOMPILE"):
    sys.path.insert(0, {testing!r})
    from miscompile import inject
    inject(os.environ["INJECT_MISCOMPILE"])
"""


def read(path: str) -> str:
    with open(path) as text:
        return text.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", choices=("cuda", "c"), required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--skip", default="", help="comma-separated steps to leave out (traced,flash,edit,device,bisect,launches)")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    check = Check(args.target, args.work)
    where = f"CUDA {check.arch} on {torch.cuda.get_device_name(0)}" if args.target == "cuda" else "target c (gcc, CPU tensors); CUDA sm_90a compile-only"
    print(f"lower-trace GPU check steps: {where}; TileLang {tilelang.__version__}, torch {torch.__version__}", flush=True)
    steps = [
        ("traced", "traced compile runs and matches torch", check.traced_runs),
        ("flash", "flash attention traced runs and matches torch", check.flash_attention),
        ("edit", "edited working copy runs (PATCHED), numbers as the edit says, untraced unaffected", check.edit_and_rerun),
        ("device", "device stage = the loaded cubin's attributes", check.device_attributes),
        ("bisect", "bisect with a numeric check finds the injected pass", check.bisect),
        ("launches", "launches kept, repro'd, regress --run and bisect --launch on the injected miscompile", check.launches),
    ]
    for key, name, body in steps:
        if key == "flash" and args.target != "cuda":
            continue  # flash attention runs on a GPU only
        if key not in skip:
            check.step(name, body)
    return check.failed


if __name__ == "__main__":
    sys.exit(main())
