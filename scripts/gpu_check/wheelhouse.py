"""The GPU check's wheelhouse: TileLang and what it needs for CPython 3.12 on x86-64 Linux, and
lower-trace's own wheel, in at most what travels to the GPU machine (64 MiB with the work tree).

build/gpu-wheelhouse/ (git-ignored, carried by `run`):
  deps.tar.xz     the PyPI wheels below, each re-zipped without compression (the same members, the
                  same bytes in each; RECORD unchanged) and the lot compressed with xz: TileLang's
                  libraries compress to about two thirds of what deflate makes of them
  lower_trace-*.whl   built from this checkout (pip wheel), as it is
  manifest.json   each wheel: its PyPI file name and sha256, the sha256 after re-zipping, what was
                  left out of it; and what was left out of the wheelhouse, and why
The downloads, and each deps.tar.xz built, are kept in the user's cache
(${XDG_CACHE_HOME:-~/.cache}/lower-trace/gpu-wheelhouse/, not carried), as pip keeps its downloads:
compressing the wheels costs about two minutes of CPU, once per machine and set of pins, not once per
checkout (the test suite runs the dry run from every fresh clone).
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

MIB = 1024 * 1024
BUDGET = 64 * MIB  # what travels to the device machine: the work tree and every carried path
PINS = ["tilelang==0.1.15", "apache-tvm-ffi==0.1.12", "z3-solver==4.15.4.0", "torch-c-dlpack-ext==0.1.5"]
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
# Members of a wheel that are not carried, and why (the install puts back what TileLang needs).
DROPPED = {
    "z3_solver": {
        "z3_solver-4.15.4.0.data/data/bin/z3": "the z3 program (22 MB): TileLang loads only the library",
        "z3/lib/libz3.so": "a second copy of z3/lib/libz3.so.4.15 (22 MB): the install links it to that one",
    },
}
LEFT_OUT = [
    ("torch, nvidia-* (CUDA libraries), triton", "on the GPU machine (its CUDA build of torch); GBs, never carried"),
    ("numpy, ml-dtypes, psutil, tqdm, cloudpickle, typing-extensions", "TileLang's other needs: on the GPU machine's image already"),
    ("nvidia-cuda-nvcc, nvidia-cuda-cccl (tilelang[nvcc])",
     "the GPU machine's image has CUDA's compiler (nvcc 13.0); too large to carry (the check says so if nvcc is missing)"),
    ("nvidia-cuda-nvdisasm (lower-trace[device])", "SASS only; the check compares resources, which need ptxas (with nvcc)"),
]


def cache_dir() -> str:
    """Where the downloads and built deps are kept on this machine (like pip's own cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lower-trace", "gpu-wheelhouse")


def deps_key() -> str:
    """What a built deps.tar.xz depends on: the pins and what is dropped from the wheels."""
    return hashlib.sha256(json.dumps([PINS, DROPPED, PLATFORMS], sort_keys=True).encode()).hexdigest()[:16]


def _load(path: str) -> dict:
    with open(path) as data:
        return json.load(data)


def say(text: str) -> None:
    print(text, flush=True)


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(cache: str, python: str) -> list[str]:
    """The pinned wheels for cp312 manylinux x86-64, from the cache or PyPI (pip download, --no-deps)."""
    os.makedirs(cache, exist_ok=True)
    platforms = [arg for platform in PLATFORMS for arg in ("--platform", platform)]
    command = [python, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:",
               "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", cache, *PINS]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("ERROR")]
        raise RuntimeError(f"pip download failed: {' '.join(lines[-2:]) or done.returncode}")
    wheels = []
    for pin in PINS:
        name, version = pin.split("==")
        stem = name.replace("-", "_")
        found = sorted(glob.glob(os.path.join(cache, f"{stem}-{version}-*.whl")))
        if not found:
            raise RuntimeError(f"pip download did not leave a wheel for {pin} in {cache}")
        wheels.append(found[-1])
    return wheels


def restored(wheel: str, dropped: dict[str, str]) -> bytes:
    """The wheel re-zipped without compression, less the dropped members (and their RECORD lines)."""
    out = io.BytesIO()
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            if info.filename in dropped:
                continue
            data = source.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                kept = [line for line in data.decode().splitlines(keepends=True) if line.split(",", 1)[0] not in dropped]
                data = "".join(kept).encode()
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.external_attr, copy.compress_type = info.external_attr, zipfile.ZIP_STORED
            target.writestr(copy, data)
    return out.getvalue()


def build_deps(wheels: list[str], house: str) -> list[dict[str, object]]:
    entries, tar_path = [], os.path.join(house, "deps.tar")
    with tarfile.open(tar_path, "w", format=tarfile.GNU_FORMAT) as tar:
        for wheel in wheels:
            name = os.path.basename(wheel)
            dropped = DROPPED.get(name.split("-")[0], {})
            data = restored(wheel, dropped)
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
            entries.append({"file": name, "pypi_sha256": sha256(wheel), "pypi_bytes": os.path.getsize(wheel),
                            "sha256": hashlib.sha256(data).hexdigest(), "dropped": dropped})  # fmt: skip
    xz = shutil.which("xz")
    if xz:
        subprocess.run([xz, "-6", "-T2", "-f", tar_path], check=True)
    else:
        with open(tar_path, "rb") as source, lzma.open(tar_path + ".xz", "wb", preset=6) as target:
            shutil.copyfileobj(source, target, 1 << 20)
        os.remove(tar_path)
    return entries


def build_lower_trace(root: str, house: str, python: str) -> str:
    for old in glob.glob(os.path.join(house, "lower_trace-*.whl")):
        os.remove(old)
    done = subprocess.run([python, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "-w", house, root], capture_output=True, text=True)
    found = glob.glob(os.path.join(house, "lower_trace-*.whl"))
    if done.returncode != 0 or len(found) != 1:
        raise RuntimeError(f"pip wheel of lower-trace failed: {' '.join((done.stdout + done.stderr).split()[-30:])}")
    return found[0]


def tree_bytes(root: str) -> int | None:
    """What else travels: tracked and untracked-not-ignored files of the checkout."""
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    total = 0
    for name in filter(None, listed.decode(errors="replace").split("\0")):
        path = os.path.join(root, name)
        if os.path.isfile(path) and not os.path.islink(path):
            total += os.path.getsize(path)
    return total


def prepare(root: str, python: str = sys.executable) -> tuple[bool, str]:
    """Build (or reuse) build/gpu-wheelhouse; print what is in it; (fits, one line)."""
    house, cache = os.path.join(root, "build", "gpu-wheelhouse"), cache_dir()
    os.makedirs(house, exist_ok=True)
    manifest_path = os.path.join(house, "manifest.json")
    try:
        manifest = _load(manifest_path)
    except (OSError, ValueError):
        manifest = {}
    deps = os.path.join(house, "deps.tar.xz")
    cached_deps, cached_manifest = os.path.join(cache, f"deps-{deps_key()}.tar.xz"), os.path.join(cache, f"deps-{deps_key()}.json")
    if manifest.get("pins") == PINS and os.path.exists(deps) and manifest.get("deps_sha256") == sha256(deps):
        say(f"wheelhouse: reusing {os.path.relpath(deps, root)} (the same pins)")
    elif _cached(cached_deps, cached_manifest):
        shutil.copyfile(cached_deps, deps)
        manifest = {key: value for key, value in _load(cached_manifest).items() if key in ("pins", "wheels", "deps_sha256")}
        say(f"wheelhouse: {os.path.relpath(deps, root)} from this machine's cache ({cached_deps}: the same pins)")
    else:
        say(f"wheelhouse: building {os.path.relpath(deps, root)} from {' '.join(PINS)} (cp312, manylinux x86-64)")
        wheels = download(cache, python)
        manifest = {"pins": PINS, "wheels": build_deps(wheels, house)}
        manifest["deps_sha256"] = sha256(deps)
        shutil.copyfile(deps, cached_deps + ".part")  # whole or not at all: the manifest names its sha256
        os.replace(cached_deps + ".part", cached_deps)
        with open(cached_manifest, "w") as out:
            json.dump(manifest, out, indent=1)
    lower_trace = build_lower_trace(root, house, python)
    manifest["lower_trace"] = os.path.basename(lower_trace)
    manifest["left_out"] = [{"what": what, "why": why} for what, why in LEFT_OUT]
    with open(manifest_path, "w") as out:
        json.dump(manifest, out, indent=1)
    say("wheelhouse contents (build/gpu-wheelhouse):")
    for entry in manifest["wheels"]:
        dropped = "; left out of it: " + "; ".join(f"{name} ({why})" for name, why in entry["dropped"].items()) if entry["dropped"] else ""
        say(f"  {entry['file']}  {entry['pypi_bytes'] / MIB:.1f} MiB on PyPI{dropped}")
    size = sum(os.path.getsize(os.path.join(house, name)) for name in os.listdir(house))
    say(f"  = deps.tar.xz {os.path.getsize(deps) / MIB:.1f} MiB (the wheels above, xz) + {manifest['lower_trace']} "
        f"{os.path.getsize(lower_trace) / MIB:.2f} MiB + manifest.json")  # fmt: skip
    say("left out of the wheelhouse:")
    for what, why in LEFT_OUT:
        say(f"  {what}: {why}")
    tree = tree_bytes(root)
    total = size + (tree or 0)
    tree_said = f" + the work tree {tree / MIB:.1f} MiB" if tree is not None else " (the work tree not counted: no git here)"
    line = f"wheelhouse {size / MIB:.1f} MiB{tree_said} = {total / MIB:.1f} MiB of the {BUDGET // MIB} MiB that travel"
    return total <= BUDGET, line


def _cached(deps: str, manifest_path: str) -> bool:
    """A deps.tar.xz built before on this machine for these pins, whole (its sha256 as recorded)."""
    try:
        manifest = _load(manifest_path)
    except (OSError, ValueError):
        return False
    return manifest.get("pins") == PINS and os.path.exists(deps) and manifest.get("deps_sha256") == sha256(deps)


def unpack(house: str, dest: str) -> list[str]:
    """The wheels, ready for pip install --no-index: deps unpacked and checked against the manifest."""
    manifest = _load(os.path.join(house, "manifest.json"))
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(os.path.join(house, "deps.tar.xz"), "r:xz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or "/" in member.name or member.name.startswith("."):
                raise RuntimeError(f"unexpected member {member.name!r} in deps.tar.xz")
            source = tar.extractfile(member)
            assert source is not None
            with open(os.path.join(dest, member.name), "wb") as out:
                shutil.copyfileobj(source, out)
    wheels = []
    for entry in manifest["wheels"]:
        path = os.path.join(dest, entry["file"])
        if sha256(path) != entry["sha256"]:
            raise RuntimeError(f"{entry['file']} does not match the manifest's sha256")
        wheels.append(path)
    lower_trace = os.path.join(house, manifest["lower_trace"])
    shutil.copy(lower_trace, dest)
    return [*wheels, os.path.join(dest, manifest["lower_trace"])]


def link_dropped(site: str) -> None:
    """What the slim z3 wheel leaves out and `import z3` looks for: libz3.so, a link to libz3.so.4.15."""
    lib = os.path.join(site, "z3", "lib")
    if os.path.exists(os.path.join(lib, "libz3.so.4.15")) and not os.path.exists(os.path.join(lib, "libz3.so")):
        os.symlink("libz3.so.4.15", os.path.join(lib, "libz3.so"))
