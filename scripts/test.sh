#!/usr/bin/env bash
# The whole test suite, from nothing: creates the environment, then runs pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$(bash "$ROOT/scripts/env.sh")"
cd "$ROOT"
# pytest (not python -m pytest): the tests import the installed package, not the checkout.
exec "$VENV/bin/pytest" -p no:cacheprovider "$@"
