"""Property-based (hypothesis): the path sanitiser, the store, the report's and the terminal's
escaping hold for any text. Skipped, with the reason, where hypothesis is not installed."""

import itertools
import json

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import lower_trace  # noqa: E402

ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=400)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_safe_component_is_always_one_harmless_path_part(name):
    from lower_trace.store.paths import safe_component

    part = safe_component(name)
    assert part and part not in (".", "..") and len(part) <= 80
    assert all(ch.isascii() and (ch.isalnum() or ch in "._-") for ch in part)


@settings(max_examples=200, deadline=None)
@given(ANY_TEXT, ANY_TEXT)
def test_safe_component_keeps_different_names_apart(a, b):
    from lower_trace.store.paths import safe_component

    if a != b:  # a 32-bit digest of the original name is kept whenever it had to be rewritten
        assert safe_component(a) != safe_component(b)


@settings(max_examples=60, deadline=None)
@given(name=ANY_TEXT, text=ANY_TEXT)
def test_store_round_trips_any_text(tmp_path_factory, name, text):
    from lower_trace.model import PassRecord, PassStatus, RunInfo
    from lower_trace.model_json import to_json
    from lower_trace.store.layout import digest_of
    from lower_trace.store.writer import TraceWriter

    run_dir = tmp_path_factory.mktemp("fuzz")
    writer = TraceWriter(str(run_dir), RunInfo(run_id="r", started=0.0, script=name))
    writer.add_snapshot(digest_of(text), text)
    writer.append("kernel", {"kernel_id": "k1", "name": name})
    record = PassRecord(kernel="k1", seq=0, name=name, status=PassStatus.CHANGED, phase=name, before=digest_of(text), after=digest_of(text))
    writer.append("pass", to_json(record))
    writer.close()
    trace = lower_trace.load_trace(str(run_dir))
    assert trace.run.script == name and trace.kernels[0].name == name and trace.kernels[0].passes[0].name == name
    assert trace.snapshot(digest_of(text)) == text


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | ANY_TEXT,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
        max_leaves=20,
    )
)
def test_json_in_the_page_is_inert_for_any_data(data):
    from lower_trace.render.report.page import json_for_script

    text = json_for_script(data)
    assert "<" not in text and ">" not in text and "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == data


def test_the_terminal_escapes_exactly_what_unicode_calls_control_format_or_separator():
    """Every code point, against unicodedata (not terminal.py's own list): printable() escapes it
    exactly when it is a control, format or separator character, a bidi control or a lone
    surrogate. A code point this Python's Unicode has not assigned may be escaped too: later
    Unicode versions made some of them format characters."""
    from lower_trace.render.terminal import printable
    from unicode_oracle import escaped, must_escape, unassigned

    wrong = []
    for cp in range(0x110000):
        shown = printable(chr(cp))
        if (must_escape(cp) and shown != escaped(cp)) or (not must_escape(cp) and shown != chr(cp) and not unassigned(cp)):
            wrong.append(f"U+{cp:04X} {shown!a}")
    assert not wrong, wrong[:20]
    assert printable("a\u061cb") == "a\\u061cb"  # ARABIC LETTER MARK, a bidi control
    # In a line of IR, source or a compiler's message the tab is layout; nothing else is.
    from lower_trace.render.terminal import printable_line

    assert printable_line("\t") == "\t" and [cp for cp in range(0x2000) if must_escape(cp) and printable_line(chr(cp)) == chr(cp)] == [0x09]


ASSIGNED_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=("Cn",)), max_size=400)


@settings(max_examples=300, deadline=None)
@given(ASSIGNED_TEXT)
def test_the_terminal_keeps_line_breaks_and_neutralises_everything_else(text):
    """Any multi-line text (a compiler's error, a traceback): one output line per line of the text,
    each character as itself, or escaped where unicodedata says it must be (tabs are layout)."""
    from lower_trace.render.terminal import printable_lines
    from unicode_oracle import escaped, must_escape

    lines = printable_lines(text)
    originals = text.replace("\r\n", "\n").split("\n")
    assert len(lines) == len(originals)
    for original, shown in zip(originals, lines, strict=False):
        assert shown == "".join(escaped(ord(ch)) if must_escape(ord(ch)) and ch != "\t" else ch for ch in original)


@settings(deadline=None)  # the first example imports report_fixtures (and TileLang with it)
@given(st.lists(st.sampled_from("abc"), max_size=14), st.lists(st.sampled_from("abc"), max_size=14))
def test_myers_keeps_a_longest_common_subsequence(a, b):
    """diff.myers (blame's and align's matcher, the page's algorithm) against an LCS computed here."""
    from lower_trace.analysis.text_diff import myers
    from report_fixtures import lcs

    pairs = myers(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in itertools.pairwise(pairs))
    assert len(pairs) == lcs(a, b)
