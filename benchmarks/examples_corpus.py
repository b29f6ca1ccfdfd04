"""TileLang's own examples as a corpus (for lower-trace regress, or any traced run): each example
runs in a fresh interpreter until its first kernel is lowered -- CUDA sm_90a source generated on
the CPU, no GPU, no nvcc (the harness of benchmarks/trace_size.py) -- one after the other.

    python benchmarks/examples_corpus.py EXAMPLE.py [EXAMPLE.py ...]
    lower-trace regress --head-config tl.disable_warp_specialized=true -- python benchmarks/examples_corpus.py EXAMPLES...

The children inherit the environment, so each is traced as its own run, named after its example.
Prints one line per example (lowered, or why not); exits 0 when at least one example lowered.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trace_size import ONE


def main() -> int:
    examples = [os.path.abspath(path) for path in sys.argv[1:]]
    if not examples:
        print(__doc__)
        return 2
    lowered = 0
    for example in examples:
        # The harness is a file named as the example (lower-trace names the run after its script),
        # in a folder of its own; the example's folder comes first on the path (its helper modules).
        with tempfile.TemporaryDirectory(prefix="lt-example-") as folder:
            harness = os.path.join(folder, os.path.basename(example))
            with open(harness, "w") as out:
                out.write(ONE)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.path.dirname(example), os.environ.get("PYTHONPATH", "")]))}
            proc = subprocess.run([sys.executable, harness, example], cwd=os.path.dirname(example), env=env, capture_output=True, text=True, timeout=600)
        ok = proc.returncode == 0
        lowered += ok
        tail = "" if ok else " -- " + ((proc.stderr or proc.stdout).strip().splitlines() or ["?"])[-1][:160]
        print(f"{'lowered' if ok else 'failed '}  {os.path.relpath(example)}{tail}", flush=True)
    return 0 if lowered else 1


if __name__ == "__main__":
    raise SystemExit(main())
