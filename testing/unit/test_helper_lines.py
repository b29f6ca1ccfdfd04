"""`where` on a line that produces no code of its own: a line inside a helper the kernel calls
(TileLang attributes an expression helper's code to the call), or a call of a helper whose
statements keep their own lines (a T.macro). The kernel text below is the ground truth."""

from lower_trace.analysis.origins import called_helper_lines, helper_call_sites

SOURCE = """\
def to_int8(value, pos):
    shifted = value >> (pos * 4)
    return shifted & 0xF

@T.macro
def dequant(out, x, i):
    out[i] = to_int8(x[i], 1)

def kernel():
    for i in T.Parallel(128):
        dequant(Y, X, i)
        Z[i] = to_int8(X[i], 0)
"""


def test_a_line_inside_an_expression_helper_names_its_call_sites():
    # The kernel's code comes from lines 7 (the macro's statement) and 12; both call to_int8.
    assert helper_call_sites(SOURCE, 2, {7, 10, 12}) == ("to_int8", [7, 12])
    assert helper_call_sites(SOURCE, 2, {10}) == ("", [])  # no line of the kernel calls it


def test_a_call_of_a_macro_names_the_macros_lines():
    assert called_helper_lines(SOURCE, 11, {7, 10, 12}) == ("dequant", [7])
    assert called_helper_lines(SOURCE, 11, {10, 12}) == ("", [])
    assert called_helper_lines(SOURCE, 40, {7}) == ("", [])  # past the end
