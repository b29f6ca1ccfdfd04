#!/usr/bin/env bash
# The html/terminal overhead of several trees of lower-trace, taking turns: commits (each in a worktree of
# its own) and the working tree, each imported through PYTHONPATH by this tree's overhead.py, on
# both cores and pinned to one. (A venv made by scripts/dev-install.sh puts this checkout first on
# sys.path whatever PYTHONPATH says: use one made by scripts/env.sh.)
#   bash benchmarks/before_after.sh REV[,REV...] [ROUNDS] [overhead.py args]
# e.g. bash benchmarks/before_after.sh 8e34dc5,660f838 2 --repeat 7 --kernels gemm,elementwise --no-replay --no-builtin
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REVS="${1:?commits to compare with, comma-separated}"; ROUNDS="${2:-2}"; shift $(( $# >= 2 ? 2 : 1 ))
VENV="$(bash "$ROOT/scripts/env.sh")"
TREES=()
cleanup() { for tree in "${TREES[@]}"; do git -C "$ROOT" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"; done; }
trap cleanup EXIT
for rev in ${REVS//,/ }; do
  tree="$(mktemp -d "${TMPDIR:-/tmp}/lower-trace-$rev.XXXXXX")"
  git -C "$ROOT" worktree add --detach -f "$tree" "$rev" >/dev/null
  TREES+=("$tree")
done
for round in $(seq "$ROUNDS"); do
  for tree in "${TREES[@]}" "$ROOT"; do
    name=$([ "$tree" = "$ROOT" ] && echo "working tree" || basename "$tree")
    for pin in "" "taskset -c 0"; do
      echo "=== round $round: $name, ${pin:+one core}${pin:-2 cores}, load $(cut -d' ' -f1-3 /proc/loadavg)"
      PYTHONPATH="$tree" $pin "$VENV/bin/python" "$ROOT/benchmarks/overhead.py" "$@" 2>/dev/null | grep -E "^[a-z_]+ +(untraced|print floor|lower-trace|tilelang)"
    done
  done
done
