"""Capture: turn compiler events into records and snapshots (no tvm import here)."""
