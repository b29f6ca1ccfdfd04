"""What must never reach a terminal or the page as itself, from Unicode's own data (unicodedata),
independent of lower_trace's list (text_safety.UNSAFE_RANGES): the tests hold that list to this."""

import unicodedata

# Unicode's Bidi_Control property (PropList.txt): the marks, embeddings, overrides and isolates.
BIDI_CONTROL = frozenset({0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)})
# Controls, format characters (zero-width, tags, bidi), line and paragraph separators; and lone
# surrogates, which no terminal can be sent.
CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs")


def must_escape(cp: int) -> bool:
    return unicodedata.category(chr(cp)) in CATEGORIES or cp in BIDI_CONTROL


def unassigned(cp: int) -> bool:
    """Not assigned in this Python's Unicode: a later Unicode may have made it a format character."""
    return unicodedata.category(chr(cp)) == "Cn"


def escaped(cp: int) -> str:
    """How the terminal shows it: \\uXXXX, \\UXXXXXXXX above the BMP."""
    return f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"
