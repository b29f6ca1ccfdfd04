#!/usr/bin/env bash
# The GPU check (docs/support.md, "GPU check"): on a GPU machine, TileLang and lower-trace installed
# from a wheelhouse carried along, then real CUDA runs: a traced compile runs and matches torch, an
# edited working copy runs (PATCHED), the device stage equals what the CUDA driver reports for the
# loaded cubin, bisect finds an injected miscompiling pass, a launch is kept, repro'd, regress --run and
# bisect --launch see the miscompile. PASS/FAIL per step; non-zero on a FAIL.
#   bash scripts/gpu_check.sh --prepare   # here: build build/gpu-wheelhouse (PyPI, once; then reused)
#   bash scripts/gpu_check.sh             # on the GPU machine, with build/gpu-wheelhouse carried
#   bash scripts/gpu_check.sh --dry-run   # here, no GPU: the wheelhouse, its install, the steps on target "c"
# PYTHON picks the interpreter (default: the test venv for --prepare/--dry-run, else python3, which on
# the GPU machine is the one holding torch).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  PY=python3
  case " $* " in
    *" --prepare "*|*" --dry-run "*) [ -x "$ROOT/.venvs/tilelang-0.1.15/bin/python" ] && PY="$ROOT/.venvs/tilelang-0.1.15/bin/python" ;;
  esac
fi
exec "$PY" "$ROOT/scripts/gpu_check/run.py" "$@"
