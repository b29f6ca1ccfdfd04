#!/usr/bin/env bash
# The html/terminal overhead of two trees of lower-trace, taking turns: a commit (in a worktree of
# its own) and the working tree, each imported through PYTHONPATH by this tree's overhead.py, on
# both cores and pinned to one.
#   bash benchmarks/before_after.sh REV [ROUNDS] [overhead.py args]
# e.g. bash benchmarks/before_after.sh 624a812 2 --kernels gemm --no-replay --no-builtin
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REV="${1:?a commit to compare with}"; ROUNDS="${2:-2}"; shift $(( $# >= 2 ? 2 : 1 ))
VENV="$(bash "$ROOT/scripts/env.sh")"
BEFORE="$(mktemp -d "${TMPDIR:-/tmp}/lower-trace-before.XXXXXX")"
trap 'git -C "$ROOT" worktree remove --force "$BEFORE" >/dev/null 2>&1 || rm -rf "$BEFORE"' EXIT
git -C "$ROOT" worktree add --detach -f "$BEFORE" "$REV" >/dev/null
for round in $(seq "$ROUNDS"); do
  for tree in "$BEFORE" "$ROOT"; do
    name=$([ "$tree" = "$ROOT" ] && echo "working tree" || echo "$REV")
    echo "=== round $round: $name, 2 cores"
    PYTHONPATH="$tree" "$VENV/bin/python" "$ROOT/benchmarks/overhead.py" --repeat 9 "$@" 2>/dev/null | grep -E "^[a-z_]+ +(untraced|lower-trace|tilelang)"
    echo "=== round $round: $name, one core"
    PYTHONPATH="$tree" taskset -c 0 "$VENV/bin/python" "$ROOT/benchmarks/overhead.py" --repeat 9 "$@" 2>/dev/null | grep -E "^[a-z_]+ +(untraced|lower-trace|tilelang)"
  done
done
