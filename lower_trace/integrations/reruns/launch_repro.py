"""A recorded launch as a folder anyone can run (``lower-trace repro --launch``): ``run.py`` (a copy of
integrations/reruns/launch_script.py: needs TileLang, torch and numpy, not lower-trace), ``launch.json``
(what to build and call, what to expect), ``inputs/`` and ``expected/`` (the tensors, .npy), and what the
kernel is rebuilt from -- ``kernel_source.py`` (the user's file, as the trace kept it) or ``kernel.json``
with ``generated.*`` (the PrimFunc handed to lowering and the exact source that was compiled).

Pure: reads the trace, writes files; every reason it cannot is a LaunchReproError, one line.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from importlib import resources

from lower_trace.config import ENV_LAUNCH_CAP, ENV_LAUNCHES
from lower_trace.model import KernelTrace, LaunchRecord, LaunchValue, Trace

SCRIPT = "run.py"
REBUILDS = ("source", "generated", "tir")
_SUFFIX = {"cuda": ".cu", "hip": ".hip", "c": ".c"}


class LaunchReproError(ValueError):
    """Why a launch cannot be written as a repro: one line, what to do."""


@dataclass(frozen=True)
class LaunchRepro:
    folder: str
    script: str  # its run.py
    rebuild: str
    outputs: int  # outputs it compares
    by_digest: int  # of which compared by digest only (not kept)


def pick_launch(kernel: KernelTrace, number: int) -> LaunchRecord:
    found = next((launch for launch in kernel.launches if launch.n == number), None)
    if found is None:
        have = ", ".join(str(launch.n) for launch in kernel.launches[:12]) or "none"
        raise LaunchReproError(
            f"kernel {kernel.kernel_id} ({kernel.name}) has no launch {number} recorded (recorded: {have}); `lower-trace show --launches` lists them"
        )
    return found


def write(trace: Trace, kernel: KernelTrace, launch: LaunchRecord, rebuild: str, folder: str, data_from: Trace | None = None) -> LaunchRepro:
    """The repro folder of one launch (created; a folder that holds anything is refused). data_from: the
    trace whose folder holds the launch's tensors, when it is not the kernel's (regress replays a base
    launch on the head side's kernel)."""
    what = f"{kernel.kernel_id} ({kernel.name}) launch {launch.n}"
    tensors = [v for v in launch.args if v.kind == "tensor"]
    if tensors and not any(v.data or "not kept" in v.note for v in tensors):
        raise LaunchReproError(f"{what} kept no tensors (traced with {ENV_LAUNCHES}=meta); trace again with {ENV_LAUNCHES}=data to keep them")
    missing = next((v for v in tensors if not v.data), None)
    if missing is not None:
        raise LaunchReproError(f"{what}: input {missing.name} was not kept ({missing.note or 'no data'}); trace again with a larger {ENV_LAUNCH_CAP}")
    info = kernel.rebuild
    if info is None:
        raise LaunchReproError(f"{what}: the trace does not say how the kernel was built (traced by a lower-trace without repro --launch); trace again")
    files: dict[str, str] = {}  # name in the folder -> text
    spec: dict[str, object] = {"rebuild": rebuild, "compile": info.compile, "versions": info.versions}
    if rebuild == "source":
        spec["factory"] = info.factory
        files["kernel_source.py"] = _user_source(trace, kernel, info.factory, info.factory_note, what)
    else:
        if rebuild == "generated":
            spec["generated"], generated = _generated(trace, kernel, what)
            files.update(generated)
        if not info.prim_func or not trace.ir_json(info.prim_func):
            raise LaunchReproError(f"{what}: its PrimFunc was not kept (traced with {ENV_LAUNCHES}=meta); trace again with {ENV_LAUNCHES}=data")
        files["kernel.json"] = trace.ir_json(info.prim_func)
    inputs = [_tensor_entry(v, "inputs") if v.kind == "tensor" else {"name": v.name, "kind": "scalar", "value": v.value} for v in launch.args]
    expected = [_tensor_entry(v, "expected") for v in launch.after] if launch.error is None else []
    spec.update({
        "title": f"{kernel.name} ({kernel.kernel_id}, launch {launch.n}, called at {launch.site or 'an unknown site'})",
        "args": inputs, "expected": expected,
        "error": f"{launch.error.type}: {launch.error.message.strip().splitlines()[0] if launch.error.message.strip() else ''}" if launch.error else "",
    })
    _write_folder(data_from or trace, folder, spec, files, [*launch.args, *(launch.after if launch.error is None else ())])
    return LaunchRepro(folder, os.path.join(folder, SCRIPT), rebuild, len(expected), sum(1 for e in expected if not e["file"]))


def _tensor_entry(value: LaunchValue, where: str) -> dict[str, object]:
    return {
        "name": value.name, "kind": "tensor", "shape": list(value.shape), "dtype": value.dtype, "strides": list(value.strides), "device": value.device,
        "digest": value.digest, "file": f"{where}/{os.path.basename(value.data)}" if value.data else "", "note": value.note,
    }


def _user_source(trace: Trace, kernel: KernelTrace, factory: dict[str, object], note: str, what: str) -> str:
    if not factory:
        raise LaunchReproError(f"{what} cannot be rebuilt from its source: {note or 'no @tilelang.jit call was seen'}; use --rebuild generated")
    path = str(factory.get("file", ""))
    text = trace.source_text(path)
    if text is None:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError:
            raise LaunchReproError(f"{what}: its source {path} is neither in the trace nor on disk; use --rebuild generated") from None
    return text


def _generated(trace: Trace, kernel: KernelTrace, what: str) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The sources the compiler was handed, in codegen order: (codegen function, language, role, file), the files."""
    entries: list[dict[str, str]] = []
    files: dict[str, str] = {}
    for step in sorted(kernel.codegen, key=lambda c: c.seq):
        if step.language not in _SUFFIX:
            continue
        text = trace.snapshot(step.source)
        if not text:
            raise LaunchReproError(f"{what}: the {step.role} source it compiled was not kept in the trace; use --rebuild source")
        same_role = sum(1 for e in entries if e["role"] == step.role)
        name = f"generated-{step.role}{'-' + str(same_role + 1) if same_role else ''}{_SUFFIX[step.language]}"
        entries.append({"function": step.function, "language": step.language, "role": step.role, "file": name})
        files[name] = text
    if not files:
        raise LaunchReproError(f"{what}: the trace holds no generated C, CUDA or HIP source to hand back; use --rebuild source")
    return entries, files


def _write_folder(trace: Trace, folder: str, spec: dict[str, object], files: dict[str, str], values: list[LaunchValue]) -> None:
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise LaunchReproError(f"-o {folder}: a file is there; name a folder (it is created)")
    if os.path.isdir(folder) and os.listdir(folder):  # an earlier repro may hold the user's edits: never written over
        raise LaunchReproError(f"-o {folder}: not empty; name a new folder (an earlier repro there, and your edits of it, are kept)")
    copies = {}  # folder-relative name -> the trace's file
    for value, sub in [*((v, "inputs") for v in values[: len(spec["args"])]), *((v, "expected") for v in values[len(spec["args"]) :])]:  # type: ignore[arg-type]
        if value.data:
            copies[f"{sub}/{os.path.basename(value.data)}"] = os.path.join(trace.path, value.data)
    gone = next((path for path in copies.values() if not os.path.isfile(path)), None)
    if gone is not None:
        raise LaunchReproError(f"{gone}: the trace's copy of this tensor is gone; trace again")
    for sub in ("inputs", "expected"):
        os.makedirs(os.path.join(folder, sub))
    for name, path in copies.items():
        shutil.copyfile(path, os.path.join(folder, name))
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(os.path.join(folder, "launch.json"), "w", encoding="utf-8") as handle:
        json.dump(spec, handle, indent=1)
        handle.write("\n")
    script = resources.files("lower_trace.integrations.reruns").joinpath("launch_script.py").read_text(encoding="utf-8")
    with open(os.path.join(folder, SCRIPT), "w", encoding="utf-8") as handle:
        handle.write(script)
