"""Property-based (hypothesis): the path sanitiser, the store, the report's and the terminal's
escaping hold for any text. Skipped, with the reason, where hypothesis is not installed."""

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
    from lower_trace.paths import safe_component

    part = safe_component(name)
    assert part and part not in (".", "..") and len(part) <= 80
    assert all(ch.isascii() and (ch.isalnum() or ch in "._-") for ch in part)


@settings(max_examples=200, deadline=None)
@given(ANY_TEXT, ANY_TEXT)
def test_safe_component_keeps_different_names_apart(a, b):
    from lower_trace.paths import safe_component

    if a != b:  # a 32-bit digest of the original name is kept whenever it had to be rewritten
        assert safe_component(a) != safe_component(b)


@settings(max_examples=60, deadline=None)
@given(name=ANY_TEXT, text=ANY_TEXT)
def test_store_round_trips_any_text(tmp_path_factory, name, text):
    from lower_trace.model import PassRecord, PassStatus, RunInfo, to_json
    from lower_trace.store import TraceWriter, digest_of

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
    from lower_trace.render.html import json_for_script

    text = json_for_script(data)
    assert "<" not in text and ">" not in text and "\u2028" not in text and "\u2029" not in text
    assert json.loads(text) == data


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_the_terminal_keeps_line_breaks_and_neutralises_everything_else(text):
    """Any multi-line text (a compiler's error, a traceback): one output line per line of the text,
    no control or bidi character left for the terminal to obey; plain lines come out unchanged."""
    from lower_trace.render.terminal import _UNSAFE, printable_lines

    lines = printable_lines(text)
    assert len(lines) == text.replace("\r\n", "\n").count("\n") + 1
    assert not any(_UNSAFE.search(line) for line in lines)
    for original, shown in zip(text.replace("\r\n", "\n").split("\n"), lines):
        if not _UNSAFE.search(original):
            assert shown == original


@given(st.lists(st.sampled_from("abc"), max_size=14), st.lists(st.sampled_from("abc"), max_size=14))
def test_myers_keeps_a_longest_common_subsequence(a, b):
    """diff.myers (blame's and align's matcher, the page's algorithm) against an LCS computed here."""
    from lower_trace.diff import myers
    from report_fixtures import lcs

    pairs = myers(a, b)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:]))
    assert len(pairs) == lcs(a, b)
