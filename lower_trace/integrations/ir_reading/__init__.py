"""What capture reads off a running compile: the IR (TVMIR: identity, printing, source spans,
layouts, signatures) and the Python stack (where each pass was called from, its arguments)."""
