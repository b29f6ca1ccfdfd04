"""lower-trace regress: a corpus run on two sides (sides.py: the interpreters and configs; corpus.py:
running it on one side; run_sides.py: both sides, from the options to two runs; result.py: stored
sides read back, and the result written)."""
