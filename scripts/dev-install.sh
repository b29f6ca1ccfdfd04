#!/usr/bin/env bash
# Development only: make a venv import lower_trace live from this checkout (no reinstall after
# each edit). Undo with `bash scripts/env.sh FLAVOR`, which reinstalls the package as users get it.
#   bash scripts/dev-install.sh [FLAVOR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venvs/${1:-tilelang-0.1.15}"
SITE="$("$VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
"$VENV/bin/python" -m pip uninstall -q -y lower-trace >/dev/null 2>&1 || true
echo "import sys; sys.path.insert(0, '$ROOT')" > "$SITE/_lower_trace_dev.pth"
cp "$ROOT/startup/lower_trace_startup.pth" "$SITE/"
printf '#!%s\nimport sys\nfrom lower_trace.cli.main import main\nsys.exit(main())\n' "$VENV/bin/python" > "$VENV/bin/lower-trace"
chmod +x "$VENV/bin/lower-trace"
echo "$VENV imports lower_trace from $ROOT"
