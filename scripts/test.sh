#!/usr/bin/env bash
# The whole test suite, from nothing: builds each environment of the support matrix,
# then runs pytest in each. Arguments go to pytest in the TileLang 0.1.15 run, e.g.
#   bash scripts/test.sh -k report
# LOWER_TRACE_MATRIX picks flavors (default: all four), e.g. LOWER_TRACE_MATRIX=tilelang-0.1.15
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MATRIX="${LOWER_TRACE_MATRIX:-tilelang-0.1.15 tilelang-0.1.13 tilelang-0.1.9 tvm-0.27}"
failed=()
for flavor in $MATRIX; do
  started=$(date +%s)
  if ! VENV="$(bash "$ROOT/scripts/env.sh" "$flavor")"; then
    failed+=("$flavor (environment)"); continue
  fi
  case "$flavor" in
    tilelang-0.1.15) tests=(testing "$@") ;;
    tilelang-0.1.*)  tests=(testing/test_legacy_tilelang.py) ;;
    tvm-*)           tests=(testing/test_plain_tvm.py testing/test_config.py testing/test_diff.py testing/test_store.py testing/test_cli_and_terminal.py) ;;
  esac
  echo "=== lower-trace tests: $flavor"
  # pytest (not python -m pytest): the tests import the installed package, not the checkout.
  if ! "$VENV/bin/pytest" -p no:cacheprovider "${tests[@]}"; then
    failed+=("$flavor")
  fi
  echo "=== $flavor took $(( $(date +%s) - started )) s"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "lower-trace tests FAILED in: ${failed[*]}"
  exit 1
fi
echo "lower-trace tests passed in: $MATRIX"
