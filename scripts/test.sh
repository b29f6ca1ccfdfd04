#!/usr/bin/env bash
# The whole test suite, from nothing: builds each environment of the support matrix, lints and
# type-checks (ruff, pyright), then runs pytest in each. Arguments go to pytest in the TileLang
# 0.1.15 run, e.g.
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
    tilelang-0.1.15) tests=(-n 2 testing/unit testing/integration testing/browser "$@") ;;  # both cores: the tests compile real kernels
    tilelang-0.1.*)  tests=(testing/integration/test_legacy_tilelang.py) ;;
    tvm-*)           tests=(testing/integration/test_plain_tvm.py testing/unit) ;;
  esac
  if [ "$flavor" = tilelang-0.1.15 ]; then
    echo "=== lower-trace lint: ruff check, pyright"
    # Findings fail the run; the tests still run, so one run shows everything.
    "$VENV/bin/ruff" check --no-cache . || failed+=("ruff")
    PYRIGHT_PYTHON_IGNORE_WARNINGS=1 "$VENV/bin/pyright" --project "$ROOT" --pythonpath "$VENV/bin/python" || failed+=("pyright")
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
