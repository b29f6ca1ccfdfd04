"""lower-trace regress: a corpus run on two sides (sides.py: the interpreters and configs; corpus.py: running it)."""
