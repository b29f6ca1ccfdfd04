"""Text from the compiler or the user, made safe for a terminal and short for a message
(pure but for the current folder; every layer may use it)."""

from __future__ import annotations

import os
import re

# What IR text or names could smuggle in for the terminal to obey, as ranges of code points:
# every control (Unicode category Cc: ANSI escapes), format character (Cf: the bidi controls,
# zero-width and tag characters), line and paragraph separator (Zl, Zp) of Unicode 15.1, and
# lone surrogates (Cs, which no terminal can be sent). The page marks the same set (render/report/page.py).
# testing/unit/test_properties.py holds the list to unicodedata's categories.
UNSAFE_RANGES = (
    (0x00, 0x1F), (0x7F, 0x9F), (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F),
    (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0xD800, 0xDFFF), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)


def _point(cp: int) -> str:
    return f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


_CLASS = "[" + "".join(_point(a) if a == b else f"{_point(a)}-{_point(b)}" for a, b in UNSAFE_RANGES) + "]"
_UNSAFE = re.compile(_CLASS)
_UNSAFE_IN_LINE = re.compile(f"(?!\t){_CLASS}")  # in a line of multi-line text a tab is layout


def _escape(match: re.Match[str]) -> str:
    return _point(ord(match.group()))


def printable(text: str) -> str:
    """A name or a message, as one line: every unsafe character (tab and line break included)
    shown as \\uXXXX (\\UXXXXXXXX above the BMP), not obeyed."""
    return _UNSAFE.sub(_escape, text)


def printable_line(line: str) -> str:
    """One line of IR, source or a compiler's message: as printable(), but tabs are layout."""
    return _UNSAFE_IN_LINE.sub(_escape, line)


def printable_lines(text: str) -> list[str]:
    """Multi-line text (an error message, a traceback, IR): its line breaks are layout, so
    it is split at them ("\\n", "\\r\\n"); everything else unsafe is escaped in each line.
    Tabs are layout too and pass through."""
    return [printable_line(line) for line in text.replace("\r\n", "\n").split("\n")]


def plural(count: int, one: str, many: str = "") -> str:
    """"1 kernel", "2 kernels", "1 pass", "3 passes" (many: the plural when it is not one + "s")."""
    return f"{count} {one if count == 1 else many or one + 's'}"


def headline(message: str) -> str:
    """The line that says what went wrong: the first non-empty line (TVM puts the check there,
    the source span and traceback after it)."""
    return next((line.strip() for line in message.splitlines() if line.strip()), "")[:300]


def short_path(path: str) -> str:
    """A path as messages show it: relative to the current folder when below it."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else path


def line_directive(text: str, path: str, language: str) -> str:
    """Prefix C-family source with #line, so compiler errors point into the user's file
    (the path escaped for a C string literal)."""
    if language not in ("cuda", "hip", "c"):
        return text
    quoted = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{quoted}"\n{text}'
