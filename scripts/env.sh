#!/usr/bin/env bash
# Create (or reuse) the virtualenv the demo and the tests run in, and install
# lower-trace into it the way a user does (pip install ., not editable).
# The venv is reused while its pins are unchanged.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
VENV="${LOWER_TRACE_VENV:-$ROOT/.venvs/tilelang-0.1.15}"
# torch must stay pinned: the pinned build is CPU-only (unpinned pulls multi-GB CUDA wheels).
PINS="tilelang==0.1.15 torch==2.13.0 pytest==9.2.0 hypothesis==6.170.17 playwright==1.65.2"
STAMP="$VENV/.lower-trace-pins"

# The report's browser tests drive Debian's Chromium (never a browser download).
if [ ! -x /usr/bin/chromium ] && [ "${LOWER_TRACE_NO_BROWSER:-0}" != 1 ]; then
  echo "lower-trace: installing chromium (apt) for the report's browser tests" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >&2
fi

if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$PINS" ]; then
  echo "lower-trace: creating $VENV ($PINS)" >&2
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PINS 2>&1 | grep -v "^WARNING: Location" >&2 || true
  "$VENV/bin/python" -c "import tilelang, torch, pytest, playwright" # fail loudly if the install did not work
  echo "$PINS" > "$STAMP"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$ROOT" 2>&1 | grep -v "^WARNING: Location" >&2 || true
"$VENV/bin/python" -c "import lower_trace" 
echo "$VENV"
