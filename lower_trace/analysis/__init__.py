"""Answers from stored traces: pure functions over loaded traces, no TVM needed."""
