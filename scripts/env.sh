#!/usr/bin/env bash
# Create (or reuse) a virtualenv the demo and the tests run in, and install
# lower-trace into it the way a user does (pip install ., not editable).
#
#   bash scripts/env.sh [FLAVOR]    FLAVOR: tilelang-0.1.15 (default), tilelang-0.1.13,
#                                   tilelang-0.1.9, tvm-0.27
#
# Prints the venv's path. A venv is reused while its pins are unchanged.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
FLAVOR="${1:-tilelang-0.1.15}"
TEST_PINS="pytest==9.2.0"
# torch must stay pinned: the pinned build is CPU-only (unpinned pulls multi-GB CUDA wheels).
# Older TileLang wheels need their apache-tvm-ffi pinned: their loose pins resolve to ones that break them.
case "$FLAVOR" in
  tilelang-0.1.15) PINS="tilelang==0.1.15 torch==2.13.0 $TEST_PINS hypothesis==6.170.17 playwright==1.65.2"; CHECK="tilelang, torch, playwright" ;;
  tilelang-0.1.13) PINS="tilelang==0.1.13 apache-tvm-ffi==0.1.12 torch==2.13.0 $TEST_PINS"; CHECK="tilelang, torch" ;;
  tilelang-0.1.9)  PINS="tilelang==0.1.9 apache-tvm-ffi==0.1.10 torch==2.13.0 $TEST_PINS"; CHECK="tilelang, torch" ;;
  tvm-0.27)        PINS="apache-tvm==0.27.0.post1 $TEST_PINS"; CHECK="tvm" ;;
  *) echo "lower-trace: unknown flavor '$FLAVOR'; use tilelang-0.1.15, tilelang-0.1.13, tilelang-0.1.9 or tvm-0.27" >&2; exit 2 ;;
esac
VENV="$ROOT/.venvs/$FLAVOR"
STAMP="$VENV/.lower-trace-pins"

# The report's browser tests drive Debian's Chromium (never a browser download).
if [ "$FLAVOR" = tilelang-0.1.15 ] && [ ! -x /usr/bin/chromium ] && [ "${LOWER_TRACE_NO_BROWSER:-0}" != 1 ]; then
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
  "$VENV/bin/python" -c "import $CHECK, pytest" # fail loudly if the install did not work
  echo "$PINS" > "$STAMP"
fi
# A development link (scripts/dev-install.sh) gives way to the package as users install it.
rm -f "$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')/_lower_trace_dev.pth"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$ROOT" 2>&1 | grep -v "^WARNING: Location" >&2 || true
"$VENV/bin/python" -c "import lower_trace"
echo "$VENV"
