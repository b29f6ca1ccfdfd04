"""correspondence (analysis/renaming.py) on the texts where its shortcuts act: the regex pass that
tells apart texts whose non-name text differs, and the line-by-line check after a renaming read off
the lines that differ. Each expected answer is worked out by hand from the rule (a one-to-one
renaming of identifiers, maps sorted by key, strings renamed as their names are)."""

from lower_trace.analysis.renaming import correspondence

MAP_A = '"tl.smem_alignment_map": {"A_shared": 512, "B_shared": 1024}\n'
MAP_B = '"tl.smem_alignment_map": {"W_s": 1024, "X_s": 512}\n'


def test_a_number_with_letters_is_not_a_name():
    # 128f and 1e5 are numbers, the same on both sides: x -> y is the renaming
    assert correspondence("x = 128f + 1e5 * x\n", "y = 128f + 1e5 * y\n") == {"y": "x"}
    # another number is no renaming, though the names correspond
    assert correspondence("x = 128f\n", "y = 129f\n") is None


def test_the_text_between_names_differs():
    assert correspondence("a = b + c\n", "a = b - c\n") is None
    assert correspondence("a = f(b)\nc = 1\n", "a = f(b, c)\nc = 1\n") is None


def test_maps_reordered_by_a_renaming_then_every_line_checked():
    a = MAP_A + "A_shared = 1\nB_shared = 2\nT.copy(A_shared, B_shared)\n"
    b = MAP_B + "X_s = 1\nW_s = 2\nT.copy(X_s, W_s)\n"
    assert correspondence(a, b) == {"X_s": "A_shared", "W_s": "B_shared"}
    # the last line differs otherwise than renamed (arguments swapped): no renaming
    assert correspondence(a, b.replace("T.copy(X_s, W_s)", "T.copy(W_s, X_s)")) is None
    # a line the two texts share names one of B's renamed buffers: renamed, it is no longer A's line
    shared = "T.fill(X_s, 0)\n"
    assert correspondence(a + shared, b + shared) is None
    # ... and the same line written with B's name is
    assert correspondence(a + "T.fill(A_shared, 0)\n", b + shared) == {"X_s": "A_shared", "W_s": "B_shared"}


def test_a_string_keeps_its_words_unless_renamed_as_a_name():
    a = MAP_A + 'A_shared = 1\nB_shared = 2\nT.reduce(A_shared, "max")\n'
    b = MAP_B + 'X_s = 1\nW_s = 2\nT.reduce(X_s, "sum")\n'
    assert correspondence(a, b) is None
