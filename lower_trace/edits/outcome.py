"""What compiling an edit needs beyond the decision (model.EditOutcome): compiler errors that
point into the user's file. Pure Python."""

from __future__ import annotations


def line_directive(text: str, path: str, language: str) -> str:
    """Prefix C-family source with #line, so compiler errors point into the user's file."""
    if language not in ("cuda", "hip", "c"):
        return text
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{quoted}"\n{text}'
