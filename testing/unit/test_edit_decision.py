"""The three-way decision (lower_trace/edits/decision.py) row by row: its docstring's table,
written out here by hand, one test row per table row, in the same order. No TileLang."""

import pytest

from lower_trace.edits import decision as decision_module
from lower_trace.edits.decision import Decision, decide
from lower_trace.edits.entries import text_digest
from lower_trace.model import EditStatus

BASE, LATEST, MINE = "int x = 1;\n", "int x = 2;\n", "int x = 3; // mine\n"
TEXTS = {"-": None, "B": BASE, "L": LATEST, "W": MINE}

# copy, baseline, latest -> status, compiles, set aside, write baseline, write copy, created
ROWS = [
    ("-", "-", "L", EditStatus.SYNCED, "L", False, True, True, True),
    ("-", "B", "L", EditStatus.SYNCED, "L", False, True, True, True),
    ("L", "-", "L", EditStatus.SYNCED, "L", False, True, True, False),
    ("W", "-", "L", EditStatus.CONFLICT, "L", True, True, True, False),
    ("B", "B", "B", EditStatus.SYNCED, "B", False, False, False, False),
    ("W", "B", "B", EditStatus.PATCHED, "W", False, False, False, False),
    ("B", "B", "L", EditStatus.REGENERATED, "L", False, True, True, False),
    ("L", "B", "L", EditStatus.SYNCED, "L", False, True, False, False),
    ("W", "B", "L", EditStatus.CONFLICT, "L", True, True, True, False),
]


@pytest.mark.parametrize("row", ROWS, ids=["/".join(row[:3]) for row in ROWS])
def test_each_row_of_the_table(row):
    copy, baseline, latest, status, compiles, aside, write_baseline, write_copy, created = row
    got = decide(TEXTS[copy], TEXTS[baseline], TEXTS[latest])
    assert got == Decision(status, compiles_edit=compiles == "W", set_aside=aside, write_baseline=write_baseline, write_copy=write_copy, created=created)
    # What is compiled is the latest codegen unless the decision is to compile the edit.
    assert (TEXTS[copy] if got.compiles_edit else TEXTS[latest]) == TEXTS[compiles]


def test_the_rows_are_the_docstrings_table_one_for_one():
    """The table a reader sees in decision.py is the one tested here: same rows, same order."""
    doc = decision_module.__doc__ or ""
    lines = doc.split("    copy  baseline  latest  status       compiles  then\n", 1)[1].split("\n\n", 1)[0].splitlines()
    table = [tuple(line.split()[:5]) for line in lines]
    assert table == [(copy, baseline, latest, status.value, compiles) for copy, baseline, latest, status, compiles, *_ in ROWS]


def test_every_status_is_some_rows_outcome_and_no_edit_is_overwritten_unsaved():
    assert {row[3] for row in ROWS} == set(EditStatus)
    for copy, baseline, latest, *_ in ROWS:
        got = decide(TEXTS[copy], TEXTS[baseline], TEXTS[latest])
        # The working copy is overwritten only when it holds no edit, or after it was set aside.
        if got.write_copy and TEXTS[copy] is not None and TEXTS[copy] not in (TEXTS[latest], TEXTS[baseline]):
            assert got.set_aside, (copy, baseline, latest)


def test_digests_decide_as_the_texts_do():
    """Only equality matters: the texts' digests (as the edit index keeps them) give the same decision."""
    for copy, baseline, latest, *_ in ROWS:
        working, base = (None if TEXTS[key] is None else text_digest(TEXTS[key]) for key in (copy, baseline))
        assert decide(working, base, text_digest(TEXTS[latest])) == decide(TEXTS[copy], TEXTS[baseline], TEXTS[latest])
