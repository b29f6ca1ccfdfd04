"""A launch of a TileLang kernel, reproduced: written by `lower-trace repro --launch`.

Run it where TileLang (the release named in launch.json), torch and numpy are installed; lower-trace
is not needed:   python run.py  [--atol A --rtol R] [--any-version]

It builds the kernel again, calls it on the recorded inputs (inputs/*.npy) and compares what the call
wrote and returned with what it did when traced (expected/*.npy): bitwise by default, or within the
tolerance given (|now - then| <= atol + rtol * |then|, torch.isclose's rule). Exit 0: the call did
what it did when traced (every output matches; or it raised the same error); 1: it did not (the first
differing element and the largest errors are printed); 2: it could not run (the line says why).

How it builds the kernel (launch.json's "rebuild"):
  source     kernel_source.py, a copy of the file that defined the @tilelang.jit function, is imported
             (its `if __name__ == "__main__":` part does not run) and the function called with the
             recorded arguments: TileLang's whole frontend and pipeline run again.
  tir        kernel.json, the PrimFunc handed to lowering (TVM's JSON), is compiled by tilelang.compile with
             the recorded arguments: this TileLang's passes and codegen, no Python frontend (bisect --launch's).
  generated  kernel.json, the PrimFunc handed to lowering (TVM's JSON), is compiled by tilelang.compile
             with the recorded arguments, and the code the compiler is handed is the recorded one
             (generated.*, through TileLang's post-processing hooks): the very code that ran, whatever
             this TileLang's passes would make of the kernel now.
The .npy files are numpy's format, read with allow_pickle=False: loading them runs no code. A dtype
numpy has not (bfloat16, float8) is stored as unsigned integers of its width, launch.json saying which.
"""

import argparse
import importlib.util
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    parser = argparse.ArgumentParser(description="Rebuild a TileLang kernel, run it on recorded inputs, compare with recorded outputs.")
    parser.add_argument("--atol", type=float, default=None, help="absolute tolerance (default: bitwise equality)")
    parser.add_argument("--rtol", type=float, default=None, help="relative tolerance (default: bitwise equality)")
    parser.add_argument("--any-version", action="store_true", help="run under another TileLang than the recorded one")
    parser.add_argument("--record", action="store_true", help="make this build's outputs the expected ones (a reference: another config, another release)")
    parser.add_argument("--json", metavar="PATH", help="also write what it found to PATH as JSON (exit, a line per output, the last line)")
    args = parser.parse_args(argv)
    report = {"outputs": {}, "said": ""}
    code = run(args, report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(dict(report, exit=code), handle)
    return code


def say(report, line, output=None):
    """Print a line; the report keeps it (an output's under its name, else as the last thing said)."""
    print(f"  {output}: {line}" if output else line)
    if output:
        report["outputs"][output] = line
    else:
        report["said"] = line


def run(args, report):
    with open(os.path.join(HERE, "launch.json"), encoding="utf-8") as handle:
        spec = json.load(handle)
    os.environ["TILELANG_DISABLE_CACHE"] = "1"  # a cached kernel would skip the build this checks
    import tilelang
    import torch

    recorded = spec["versions"].get("tilelang", "")
    if recorded and tilelang.__version__ != recorded and not args.any_version:
        say(report, f"this is TileLang {tilelang.__version__}, the launch was recorded with {recorded}: results may differ for that alone;"
            " rerun with --any-version to run anyway")
        return 2
    print(f"{spec['title']}: rebuilding from {spec['rebuild']} ...")
    kernel = build_from_source(spec, report) if spec["rebuild"] == "source" else build_from_generated(spec, report)
    if kernel is None:
        return 2
    arguments = [load(v, torch) if v["kind"] == "tensor" else v["value"] for v in spec["args"]]
    error = spec.get("error")
    try:
        result = kernel(*arguments)
    except Exception as exc:
        now_error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        if error:
            same = type(exc).__name__ == error.split(":")[0]
            say(report, f"the call raised {now_error}; when traced it raised {error}: {'the same error' if same else 'another error'}")
            return 0 if same else 1
        say(report, f"the call raised {now_error}; when traced it returned")
        return 1
    if error:
        say(report, f"the call returned; when traced it raised {error}")
        return 1
    returned = list(result) if isinstance(result, (list, tuple)) else [result]
    now = {v["name"]: a for v, a in zip(spec["args"], arguments, strict=True) if v["kind"] == "tensor"}
    now.update({("return" if i == 0 else f"return.{i}"): t for i, t in enumerate(t for t in returned if isinstance(t, torch.Tensor))})
    if args.record:
        return record(spec, now, torch, report)
    tolerant = args.atol is not None or args.rtol is not None
    rule = f"within atol={args.atol or 0.0:g}, rtol={args.rtol or 0.0:g}" if tolerant else "bitwise"
    differ = 0
    for expected in spec["expected"]:
        name = expected["name"]
        if name not in now:
            say(report, "the call now gives no such output", name)
            differ += 1
        elif not expected.get("file"):
            same = digest(now[name], torch) == expected["digest"]
            say(report, f"{'identical' if same else 'differs'} (by digest only: {expected.get('note') or 'its data was not kept'})", name)
            differ += not same
        else:
            line = compare(name, load(expected, torch), now[name], torch, args.atol, args.rtol)
            say(report, line, name)
            differ += not line.startswith(("identical", "matches"))
    say(report, f"{'results differ' if differ else 'results match'} ({rule}): {differ} of {len(spec['expected'])} outputs differ")
    return 1 if differ else 0


def record(spec, now, torch, report):
    """--record: what this build wrote and returned becomes expected/ (launch.json rewritten)."""
    import numpy

    widths = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32, 8: torch.uint64}
    for expected in spec["expected"]:
        tensor = now.get(expected["name"])
        if tensor is None:
            continue
        data = tensor.detach().contiguous().cpu()
        try:
            array = data.numpy()
        except TypeError:  # a dtype numpy has not: its bytes as unsigned integers of the same width
            array = data.view(widths[data.element_size()]).numpy()
        expected["file"] = f"expected/reference-{expected['name']}.npy"
        expected["digest"], expected["note"] = digest(data, torch), "recorded by --record"
        with open(os.path.join(HERE, expected["file"]), "wb") as handle:
            numpy.save(handle, array, allow_pickle=False)
    spec["title"] += ", outputs from --record"
    with open(os.path.join(HERE, "launch.json"), "w", encoding="utf-8") as handle:
        json.dump(spec, handle, indent=1)
    say(report, f"recorded: {len(spec['expected'])} outputs of this build are now the expected ones")
    return 0


def build_from_source(spec, report):
    """Import kernel_source.py and call its @tilelang.jit function as the program did."""
    import tilelang.language as T
    import torch

    if importlib.util.find_spec("lower_trace") is None:  # the kernel's file may import it to trace itself
        sys.modules["lower_trace"] = _Absent("lower_trace")
    factory = spec["factory"]
    sys.path.insert(0, HERE)
    try:
        module = __import__("kernel_source")
    except Exception as exc:
        say(report, f"kernel_source.py (a copy of {factory['file']}) does not import here: {type(exc).__name__}: {exc}")
        return None
    names = {"T": T, "torch": torch, "float": float, "__builtins__": {}}
    args = [eval(text, names) for text in factory["args"]]
    kwargs = {key: eval(text, names) for key, text in factory["kwargs"].items()}
    return getattr(module, factory["name"])(*args, **kwargs)


def build_from_generated(spec, report):
    """tilelang.compile on the recorded PrimFunc; each codegen call's source replaced by the recorded one:
    CUDA's and HIP's inside TileLang's post-processing hook (before nvcc sees it), C's there too or, where
    TileLang has no hook for it, as the source module the codegen call returns."""
    import tilelang
    import tvm_ffi
    from tilelang import tvm
    from tilelang.engine import callback

    with open(os.path.join(HERE, "kernel.json"), encoding="utf-8") as handle:
        func = tvm.ir.load_json(handle.read())
    build = spec["compile"]
    target = tvm.target.Target(build["target"], build["target_host"]) if build["target_host"] else tvm.target.Target(build["target"])
    if spec["rebuild"] == "tir":  # this TileLang's own pipeline and codegen on the recorded PrimFunc
        return tilelang.compile(
            func, out_idx=build["out_idx"], target=target, execution_backend=build["execution_backend"],
            pass_configs=build["pass_configs"] or None, compile_flags=build["compile_flags"] or None,
        )
    try:
        from tilelang import instrumentation
    except ImportError:
        say(report, f"TileLang {tilelang.__version__} has no instrumentation API to hand a codegen call the recorded source (0.1.15 has);"
            " use --rebuild source or tir")
        return None
    recorded = []
    for entry in spec["generated"]:
        with open(os.path.join(HERE, entry["file"]), encoding="utf-8") as handle:
            recorded.append(dict(entry, text=handle.read(), used=False))
    state = {"current": None}
    for language, register in (("cuda", callback.register_cuda_postproc), ("hip", callback.register_hip_postproc), ("c", callback.register_c_postproc)):
        register(_hook(language, state))
    make_source_module = tvm_ffi.get_global_func("runtime.CSourceModuleCreate")

    class Replace(instrumentation.PassInstrumentationTool):
        def run_codegen(self, event, next_call):
            entry = next((e for e in recorded if not e["used"] and e["function"] == str(event.name)), None)
            if entry is None:
                return next_call()
            entry["used"], state["current"] = True, entry
            try:
                result = next_call()
            finally:
                state["current"] = None
            if not entry.get("handed") and entry["language"] == "c":
                entry["handed"] = True
                return make_source_module(entry["text"], "c", [], [])
            return result

    instrumentation.register_pass_instrumentation_tool("launch-repro", Replace)
    try:
        kernel = tilelang.compile(
            func, out_idx=build["out_idx"], target=target, execution_backend=build["execution_backend"],
            pass_configs=build["pass_configs"] or None, compile_flags=build["compile_flags"] or None,
        )
    finally:
        instrumentation.unregister_pass_instrumentation_tool("launch-repro")
    missing = [f"{e['function']} ({e['file']})" for e in recorded if not e.get("handed")]
    if missing:
        say(report, f"TileLang did not build the kernel through the codegen calls recorded: {', '.join(missing)} not handed to the compiler;"
            " the kernel would not be the recorded code")
        return None
    return kernel


def _hook(language, state):
    """TileLang's post-processing hook: the source of the codegen call under way is replaced by its recorded one."""

    def postproc(code, target):
        entry = state["current"]
        if entry is None or entry["language"] != language:
            return str(code)
        entry["handed"] = True
        return entry["text"]

    return postproc


def load(value, torch):
    """A recorded tensor, as the dtype it had (numpy's file holds its bytes)."""
    import numpy

    array = numpy.load(os.path.join(HERE, value["file"]), allow_pickle=False)
    tensor = torch.from_numpy(array.copy())
    dtype = getattr(torch, value["dtype"])
    tensor = (tensor.view(dtype) if tensor.dtype != dtype else tensor).reshape(value["shape"]).to(value["device"])
    strides = value.get("strides")
    if strides and tuple(strides) != tensor.stride():  # laid out as the call had it (a slice, a transpose)
        tensor = torch.empty_strided(tensor.shape, strides, dtype=dtype, device=tensor.device).copy_(tensor)
    return tensor


def digest(tensor, torch):
    import hashlib

    data = tensor.detach().contiguous().reshape(-1).cpu()
    return hashlib.blake2b(data.view(torch.uint8).numpy(), digest_size=16).hexdigest()


def compare(name, then, now, torch, atol, rtol):
    """One line: identical, or where and by how much now differs from then."""
    if tuple(then.shape) != tuple(now.shape) or then.dtype != now.dtype:
        return f"differs: shape {tuple(now.shape)} {now.dtype} now, {tuple(then.shape)} {then.dtype} then"
    now = now.detach().cpu()
    if torch.equal(then.reshape(-1).view(torch.uint8), now.contiguous().reshape(-1).view(torch.uint8)):
        return "identical (bitwise)"
    a, b = then.to(torch.float64), now.to(torch.float64)
    if atol is not None or rtol is not None:
        close = torch.isclose(b, a, rtol=rtol or 0.0, atol=atol or 0.0, equal_nan=True)
    else:
        close = (a == b) | (a.isnan() & b.isnan())
    error = (a - b).abs()
    relative = error / a.abs().clamp_min(torch.finfo(torch.float64).tiny)
    finite = error[~error.isnan()]
    worst = "NaN where a number was"
    if finite.numel():
        worst = f"max abs error {finite.max().item():.6g}, max rel error {relative[~relative.isnan()].max().item():.6g}"
    if bool(close.all()):
        return f"matches within tolerance ({worst})"
    bad = (~close).nonzero()[0].tolist()
    where = "[" + ", ".join(str(i) for i in bad) + "]"
    count = int((~close).sum().item())
    return f"differs at {where}: {a[tuple(bad)].item():.9g} then, {b[tuple(bad)].item():.9g} now; {count} of {a.numel()} elements; {worst}"


class _Absent(types.ModuleType):
    """A stand-in for a module the kernel's file imports but this run has no use for: every name does nothing."""

    def __getattr__(self, name):
        return _nothing


def _nothing(*args, **kwargs):
    return None


if __name__ == "__main__":
    sys.exit(main())
