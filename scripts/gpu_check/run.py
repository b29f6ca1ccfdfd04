"""The GPU check (scripts/gpu_check.sh): prepare the wheelhouse, install it, run the steps.

    python run.py --prepare    # here: build/gpu-wheelhouse (TileLang for cp312 + lower-trace's wheel)
    python run.py              # on the GPU machine: a venv from the wheelhouse, then the steps on CUDA
    python run.py --dry-run    # here, no GPU: the wheelhouse, its install, the steps on target "c"

Prints `PASS <step>: ...` / `FAIL <step>: <reason>` and a summary line; exits 1 on any FAIL.
Standard library only (the steps themselves run in the venv it makes).
"""

from __future__ import annotations

import argparse
import glob
import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import wheelhouse  # noqa: E402

HOUSE = os.path.join(ROOT, "build", "gpu-wheelhouse")
# What the GPU machine's image has besides torch that TileLang needs; in the dry run they come from
# the interpreter running this (the test venv), linked into a folder that plays the image's site-packages.
IMAGE = ["torch", "numpy", "ml-dtypes", "psutil", "tqdm", "cloudpickle", "typing-extensions", "filelock", "sympy", "mpmath",
         "networkx", "jinja2", "markupsafe", "fsspec", "packaging", "setuptools"]  # fmt: skip


class Outcome:
    def __init__(self) -> None:
        self.passed, self.failed = 0, 0

    def ok(self, step: str, said: str) -> None:
        self.passed += 1
        print(f"PASS {step}: {said}", flush=True)

    def fail(self, step: str, reason: str) -> None:
        self.failed += 1
        print(f"FAIL {step}: {reason}", flush=True)


def find_nvcc() -> str | None:
    """nvcc on PATH, under CUDA_HOME / CUDA_PATH, or /usr/local/cuda."""
    places = [shutil.which("nvcc")]
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            places.append(os.path.join(os.environ[variable], "bin", "nvcc"))
    places.append("/usr/local/cuda/bin/nvcc")
    return next((place for place in places if place and os.access(place, os.X_OK)), None)


def run_quiet(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def tail(done: subprocess.CompletedProcess[str], words: int = 40) -> str:
    return " ".join((done.stdout + done.stderr).split()[-words:])


def site_of(python: str) -> str:
    return run_quiet([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True).stdout.strip()


def make_venv(python: str, where: str, parents: list[str]) -> str:
    """A venv of `python`; `parents` (site-packages folders) visible after its own, by a .pth line."""
    # Without pip (ensurepip may be missing, as in Debian's python): the wheels are installed by
    # the running interpreter's pip into it (pip --python).
    done = run_quiet([python, "-m", "venv", "--without-pip", "--system-site-packages", where])
    if done.returncode != 0:
        raise RuntimeError(f"python -m venv failed: {tail(done)}")
    venv_python = os.path.join(where, "bin", "python")
    if parents:
        with open(os.path.join(site_of(venv_python), "_gpu_check_parent.pth"), "w") as out:
            out.write("".join(f"{parent}\n" for parent in parents))
    return venv_python


def install(venv_python: str, wheels: list[str]) -> None:
    pip = [sys.executable, "-m", "pip", "--python", venv_python, "install", "-q", "--disable-pip-version-check"]
    done = run_quiet([*pip, "--no-index", "--no-deps", "--no-compile", *wheels])
    if done.returncode != 0:
        raise RuntimeError(f"pip install --no-index failed: {tail(done)}")
    wheelhouse.link_dropped(site_of(venv_python))


MISSING = """
import importlib.metadata as m, re, sys
missing = []
for dist in sys.argv[1:]:
    for req in m.requires(dist) or []:
        if "extra ==" in req or "platform_system" in req or "python_version >= \\"3.14\\"" in req:
            continue
        name = re.split(r"[ ;<>=!~\\[(]", req, maxsplit=1)[0]
        try:
            m.version(name)
        except m.PackageNotFoundError:
            missing.append(f"{name} (for {dist})")
print("; ".join(missing))
"""


def missing_requirements(venv_python: str, dists: list[str]) -> str:
    return run_quiet([venv_python, "-c", MISSING, *dists], check=True).stdout.strip()


def wheel_tags(path: str) -> list[str]:
    with zipfile.ZipFile(path) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/WHEEL"))
        return [line.split(":", 1)[1].strip() for line in wheel.read(name).decode().splitlines() if line.startswith("Tag:")]


def fits(tag: str, python: tuple[int, int]) -> bool:
    """Whether a wheel tag installs on CPython `python`, x86-64 Linux (glibc 2.28 and later)."""
    interpreter, abi, platform = tag.split("-")
    if platform != "any" and not re.fullmatch(r"(manylinux_2_\d+|manylinux\d*)_x86_64", platform):
        return False
    if interpreter.startswith("py3"):
        return True
    made_for = (int(interpreter[2]), int(interpreter[3:]))  # cp39 -> (3, 9), cp312 -> (3, 12)
    return made_for <= python if abi == "abi3" else made_for == python


def find_python312() -> str | None:
    candidates = [shutil.which("python3.12"), *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))]
    for candidate in filter(None, candidates):
        done = run_quiet([candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"])
        if done.returncode == 0 and done.stdout.strip() == "True":
            return candidate
    return None


def step_env(work: str, nvcc: str | None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TL_LOWER_TRACE", "PYTHONPATH"))}
    env.update(TILELANG_DISABLE_CACHE="1", TILELANG_CACHE_DIR=os.path.join(work, "tilelang-cache"), PYTHONUNBUFFERED="1")
    if nvcc:
        cuda_bin = os.path.dirname(os.path.realpath(nvcc))
        env["PATH"] = f"{os.path.dirname(nvcc)}:{cuda_bin}:{env.get('PATH', '')}"
        env.setdefault("CUDA_HOME", os.path.dirname(cuda_bin))
    return env


def run_steps(outcome: Outcome, venv_python: str, target: str, work: str, nvcc: str | None) -> None:
    command = [venv_python, os.path.join(HERE, "steps.py"), "--target", target, "--work", os.path.join(work, "steps")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=step_env(work, nvcc), cwd=work)
    assert process.stdout is not None
    with open(os.path.join(work, "steps.log"), "w") as log:
        for line in process.stdout:
            log.write(line)
            if line.startswith("PASS "):
                outcome.passed += 1
            elif line.startswith("FAIL "):
                outcome.failed += 1
            if line.startswith(("PASS ", "FAIL ", "lower-trace GPU check steps:")):
                print(line, end="", flush=True)
    code = process.wait()
    if code < 0 or (code and not outcome.failed):
        outcome.fail("steps", f"the steps' process ended with {code}; its output: {os.path.join(work, 'steps.log')}")


def gpu(outcome: Outcome, work: str) -> None:
    probe = run_quiet([sys.executable, "-c", "import torch; print(torch.__version__, torch.cuda.is_available()); "
                       "print(torch.cuda.get_device_name(0)); print(torch.cuda.get_device_capability(0))"])  # fmt: skip
    if probe.returncode != 0 or "True" not in (probe.stdout.splitlines() or [""])[0]:
        outcome.fail("GPU", f"{sys.executable}'s torch sees no CUDA device: {tail(probe, 20)}")
        return
    torch_line, name, capability = probe.stdout.splitlines()[:3]
    outcome.ok("GPU", f"{name}, capability {capability}, torch {torch_line.split()[0]} ({sys.executable})")
    nvcc = find_nvcc()
    if nvcc is None:
        outcome.fail("nvcc", "no nvcc on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin: TileLang cannot compile CUDA here, so no step can run")
        return
    version = run_quiet([nvcc, "--version"]).stdout.strip().splitlines()[-1:]
    outcome.ok("nvcc", f"{nvcc} ({' '.join(version)})")
    # The venv sees the machine's own site-packages (torch) after its own, also where python3 is a venv itself.
    parents = [path for path in sys.path if path.endswith(("site-packages", "dist-packages")) and os.path.isdir(path)]
    venv_python = install_from_house(outcome, work, sys.executable, parents=parents)
    if venv_python:
        run_steps(outcome, venv_python, "cuda", work, nvcc)


def install_from_house(outcome: Outcome, work: str, python: str, parents: list[str], skip: tuple[str, ...] = ()) -> str | None:
    """The wheelhouse installed into a fresh venv (pip --no-index); its python, or None."""
    version = run_quiet([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).stdout.strip()
    step = f"install from the wheelhouse (Python {version}" + (", the GPU machine's packages played by links to this venv's)" if skip else ")")
    try:
        wheels = wheelhouse.unpack(HOUSE, os.path.join(work, "wheels"))
        chosen = [wheel for wheel in wheels if not os.path.basename(wheel).startswith(skip)]
        venv_python = make_venv(python, os.path.join(work, "venv"), parents)
        install(venv_python, chosen)
        missing = missing_requirements(venv_python, ["tilelang", "lower-trace"])
        if missing:
            outcome.fail(step, f"installed, but these are missing: {missing}")
            return None
        probe = "import tilelang, lower_trace, z3; print(tilelang.__version__, tilelang.__file__)"
        smoke = run_quiet([venv_python, "-c", probe], env=step_env(work, None))
        if smoke.returncode != 0:
            outcome.fail(step, f"import tilelang failed: {tail(smoke)}")
            return None
        site = site_of(venv_python)
        tl_version, where = (smoke.stdout.strip().splitlines() or ["? ?"])[-1].split()[:2]
        if not where.startswith(site):
            outcome.fail(step, f"tilelang was imported from {where}, not the venv's {site}")
            return None
        names = ", ".join(os.path.basename(wheel).split("-")[0] for wheel in chosen)
        left = f"; {', '.join(skip)} (cp312 only) from the played image" if skip else ""
        outcome.ok(step, f"{names} into a fresh venv (pip --no-index --no-deps){left}; TileLang {tl_version} imports from it")
        return venv_python
    except Exception as exc:
        outcome.fail(step, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
        return None


def check_312(outcome: Outcome, work: str) -> None:
    """Every wheel into a fresh Python 3.12 venv (nothing else there: no torch), and what loads without torch."""
    step = "the wheelhouse installs on Python 3.12"
    python = find_python312()
    wheels = wheelhouse.unpack(HOUSE, os.path.join(work, "wheels-312"))
    if python is None:
        bad = [f"{os.path.basename(w)} ({', '.join(wheel_tags(w))})" for w in wheels if not any(fits(tag, (3, 12)) for tag in wheel_tags(w))]
        if bad:
            outcome.fail(step, f"no Python 3.12 here; by their tags these do not install on CPython 3.12 x86-64: {'; '.join(bad)}")
        else:
            outcome.ok(step, "no Python 3.12 here: checked by the wheels' tags only (each fits CPython 3.12, manylinux x86-64)")
        return
    try:
        venv_python = make_venv(python, os.path.join(work, "venv-312"), [])
        install(venv_python, wheels)
        probe = ("import ctypes, os, z3, importlib.metadata as m, importlib.util; "
                 "lib = os.path.join(os.path.dirname(importlib.util.find_spec('tilelang').origin), 'lib', 'libtvm_compiler.so'); "
                 "ctypes.CDLL(lib); import lower_trace; print(z3.get_version_string(), m.version('apache-tvm-ffi'))")  # fmt: skip
        done = run_quiet([venv_python, "-c", probe])
        if done.returncode != 0:
            outcome.fail(step, f"installed, but loading failed: {tail(done)}")
            return
        z3_version, ffi = done.stdout.split()[:2]
        outcome.ok(step, f"all {len(wheels)} wheels into a bare Python 3.12 venv (--no-index); z3 {z3_version} and lower_trace import, "
                   f"TileLang's libtvm_compiler.so loads (libz3 and tvm-ffi {ffi}'s libtvm_ffi found); importing tilelang and tvm_ffi "
                   f"needs torch and typing-extensions, not here for 3.12 (the GPU machine has them)")  # fmt: skip
    except Exception as exc:
        outcome.fail(step, f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")


def played_image(work: str) -> str:
    """A folder playing the GPU machine's site-packages: links to this interpreter's copies of IMAGE
    and of the cp312-only wheels' packages (apache-tvm-ffi, torch-c-dlpack-ext, the same versions)."""
    folder = os.path.join(work, "image-site-packages")
    os.makedirs(folder, exist_ok=True)
    for name in [*IMAGE, "apache-tvm-ffi", "torch-c-dlpack-ext"]:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        base = str(dist.locate_file(""))
        tops = {str(path).split("/")[0] for path in dist.files or [] if not str(path).startswith("..")}
        for top in tops:
            source, target = os.path.join(base, top), os.path.join(folder, top)
            if os.path.exists(source) and not os.path.lexists(target) and not top.endswith(".pth"):
                os.symlink(source, target)
    return folder


def dry_run(outcome: Outcome, work: str) -> None:
    nvcc = find_nvcc()
    check_312(outcome, work)
    image = played_image(work)
    venv_python = install_from_house(outcome, work, sys.executable, parents=[image], skip=("apache_tvm_ffi", "torch_c_dlpack_ext"))
    if venv_python:
        run_steps(outcome, venv_python, "c", work, nvcc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--prepare", action="store_true", help="build build/gpu-wheelhouse here (needs pip and PyPI, once)")
    mode.add_argument("--dry-run", action="store_true", help="everything that needs no GPU, here")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (venvs, traces, logs)")
    args = parser.parse_args()
    outcome = Outcome()
    if args.prepare or args.dry_run:
        try:
            fitting, line = wheelhouse.prepare(ROOT)
            (outcome.ok if fitting else outcome.fail)("wheelhouse", line)
        except Exception as exc:
            outcome.fail("wheelhouse", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
        if args.prepare:
            return 1 if outcome.failed else 0
    elif not os.path.exists(os.path.join(HOUSE, "manifest.json")):
        outcome.fail("wheelhouse", f"no {HOUSE}: build it with `bash scripts/gpu_check.sh --prepare`, and carry build/gpu-wheelhouse")
    if not outcome.failed:
        work = tempfile.mkdtemp(prefix="lower-trace-gpu-check-")
        print(f"work folder: {work}", flush=True)
        try:
            (dry_run if args.dry_run else gpu)(outcome, work)
        finally:
            if args.keep or outcome.failed:
                print(f"kept the work folder (venvs, traces, steps.log): {work}", flush=True)
            else:
                shutil.rmtree(work, ignore_errors=True)
    print(f"gpu_check{' --dry-run' if args.dry_run else ''}: {outcome.passed} passed, {outcome.failed} failed", flush=True)
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())
