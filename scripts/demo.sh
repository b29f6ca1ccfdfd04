#!/usr/bin/env bash
# The demo: trace a pipelined GEMM lowered to CUDA (no GPU needed), print where the trace and report are.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The demo's venv holds TileLang, torch and lower-trace only: scripts/test.sh adds the test tools.
VENV="$(bash "$ROOT/scripts/env.sh")"
cd "$ROOT"
"$VENV/bin/lower-trace" run --mode html examples/gemm.py
echo
echo "Try next:"
echo "  $VENV/bin/lower-trace show --changed --no-source      # the same trace, pass by pass, in the terminal"
echo "  TL_LOWER_TRACE=terminal $VENV/bin/python examples/gemm.py"
