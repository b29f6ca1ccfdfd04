from lower_trace.analysis import text_diff as diff

BEFORE = "\n".join(f"line {i}" for i in range(20))
AFTER = BEFORE.replace("line 5", "line five").replace("line 15\n", "") + "\nline 20"


def test_stats_count_added_and_removed_lines():
    stats = diff.stats(BEFORE, AFTER)
    assert (stats.added, stats.removed) == (2, 2)
    assert stats.changed
    assert not diff.stats(BEFORE, BEFORE).changed


def test_hunks_carry_context_and_line_numbers():
    hunks = diff.hunks(BEFORE, AFTER, context=1)
    # The same hunks GNU `diff -U1` prints for these texts.
    assert [h.header for h in hunks] == ["@@ -5,3 +5,3 @@", "@@ -15,3 +15,2 @@", "@@ -20,1 +19,2 @@"]
    first = hunks[0].lines
    assert [(line.tag, line.text) for line in first] == [(" ", "line 4"), ("-", "line 5"), ("+", "line five"), (" ", "line 6")]
    assert first[1].old_no == 6 and first[1].new_no is None
    assert first[2].new_no == 6 and first[2].old_no is None
    assert diff.hunks(BEFORE, BEFORE) == []

