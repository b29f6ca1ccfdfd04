"""What each generated line of testing/copied_kernels.py's kernels must map to, decided from the
CUDA text and the kernels' marker comments alone (never from lower-trace's rules). Shared by the
integration tests (fresh compiles, the CLI's answers) and the unit tier (a stored trace, the
analysis in process), so a rule change fails in seconds and both tiers agree on the truth.

A kernel's lines are ``[(text, marker name or line or None, certain)]``; each ``*_problems``
function returns what is wrong (empty: all right)."""

import re


def brace_blocks(lines):
    """Per line, the texts of the lines of each brace block it is in, innermost first."""
    stack, inside = [], []
    for i, (text, _, _) in enumerate(lines):
        inside.append(list(stack))
        if text.rstrip().endswith("{"):
            stack.append(i)
        elif text.strip().startswith("}") and stack:
            stack.pop()
            if text.rstrip().endswith("{"):  # } else {
                stack.append(i)
    return inside


# A line of the copy of buffer {b} into {b}_shared: a TMA load, a store into the shared tile, an
# async copy, or the guarded load of the tile's value (a condval).
_COPY_OF = r"tma_load\({b}_desc|\(\(half_t\*\){b}_shared\) \+ .* = |cp_async_gs<\d+>\(\(&\(\(\(half_t\*\){b}_shared\)|condval\w* = \*\(uint4\*\)\({b} \+"


def truth_of_pipelined(lines):
    """The marker each generated line of a guarded pipeline must map to, decided from its text alone
    (None: a line no statement of the kernel names, such as a barrier)."""
    expected = []
    blocks = brace_blocks(lines)
    for i, (text, _, _) in enumerate(lines):
        code = text.strip()
        block_texts = [lines[b][0] for b in blocks[i]]
        if re.match(r"int block\w* = Blocks\[", code):
            expected.append("gp_block")
        elif re.match(r"if \(0 <= block\w*\) \{", code):
            expected.append("gp_guard")
        elif re.match(r"for \(int k(?:_\d+)? = ", code):
            expected.append("gp_loop")
        elif copied := next((buffer for buffer in "AB" if re.search(_COPY_OF.format(b=buffer), code)), None):
            expected.append(f"gp_copy_{copied.lower()}")
        elif re.search(r"ptx_ldmatrix|mma_sync|wgmma_|initialize_wgmma_descriptor|half_t [AB]_local", code):
            expected.append("gp_gemm")
        elif re.search(r"\*\(float2\*\)\(C \+", code):
            expected.append("gp_store")
        elif re.match(r"if \(\(block\w* < 16\)\) \{", code) and any("A_shared" in t or "A +" in t for t in [*block_texts[:1], lines[i + 1][0]]):
            expected.append("gp_copy_a" if "A +" in lines[i + 1][0] else "gp_copy_b")
        else:
            expected.append(None)
    return expected


def pipelined_problems(lines):
    """Every copy of the guarded pipeline's statements on its marker, and certain."""
    expected = truth_of_pipelined(lines)
    checked = [(text.strip()[:70], want, mark, certain) for (text, mark, certain), want in zip(lines, expected, strict=True) if want]
    counts = {want: sum(1 for _, w, _, _ in checked if w == want) for want in ("gp_block", "gp_guard", "gp_copy_a", "gp_copy_b", "gp_gemm")}
    if counts["gp_block"] < 2 or counts["gp_guard"] < 2:  # the pipeliner copied the scalar and the guard
        return [("too few copies", counts)]
    wrong = [("wrong", text, want, mark) for text, want, mark, _ in checked if mark != want]
    guessed = [("guessed", text, want) for text, want, _, certain in checked if not certain]
    return wrong + guessed


# A condval block of inlined_lets is told by the value it takes when its condition holds.
LET_VALUES = {r"\(\(\(int\)blockIdx\.x\) \+ 2\);": "let_steps", r"\(\(int\)blockIdx\.x\);": "let_last", r"7;": "let_late", r"\*\(uint4\*\)\(A \+": "let_copy"}


def lets_problems(lines):
    """Each condval block on the line that assigned its let (the copy's own guard on the copy), certain."""
    problems, seen = [], []
    for i, (text, _, _) in enumerate(lines):
        if not re.match(r"\s*\w+ condval(_\d+)?;", text):
            continue
        then = lines[i + 2][0]
        want = next((name for value, name in LET_VALUES.items() if re.search(rf"condval\w* = {value}", then)), None)
        if want is None:
            problems.append(("unknown block", then))
            continue
        block = [lines[k] for k in range(i, i + 6) if not lines[k][0].strip().startswith("}")]  # decl, if, then, else value
        if [(mark, certain) for _, mark, certain in block] != [(want, True)] * len(block):
            problems.append((want, block))
        seen.append(want)
    if sorted(set(seen)) != ["let_copy", "let_last", "let_late", "let_steps"]:
        problems.append(("blocks seen", seen))
    loops = [(mark, certain) for text, mark, certain in lines if re.match(r"\s*for \(int s = ", text)]
    branches = [(mark, certain) for text, mark, certain in lines if re.match(r"\s*if \(condval\w* != 3\)", text)]
    if loops != [("let_loop", True)] or branches != [("let_if", True)]:
        problems.append(("loop and if", loops, branches))
    return problems


def guarded_store_problems(lines):
    """The store TileLang guards anew and the user's `if` each their own, certain; the bounds checks
    the store's, never the `if`'s; the T.Parallel loop the user's loop (or a guess)."""
    problems = []
    stores = [(mark, certain) for text, mark, certain in lines if re.match(r"\s*\*\(uint4\*\)\(Out \+", text)]
    if stores != [("gs_store", True)]:
        problems.append(("store", stores))
    branch = [(mark, certain) for text, mark, certain in lines if re.search(r"< count\)", text)]
    if branch != [("gs_if", True)]:
        problems.append(("if", branch))
    checks = [(mark, certain) for text, mark, certain in lines if re.match(r"\s*if \(", text) and "start" in text and "count" not in text]
    if len(checks) != 2 or any(mark != "gs_store" for mark, _ in checks):
        problems.append(("bounds checks", checks))
    loops = [(mark, certain) for text, mark, certain in lines if re.match(r"\s*for \(int i_\d+ = ", text)]
    if ("gs_loop", True) not in loops or any(mark != "gs_loop" and certain for mark, certain in loops):
        problems.append(("loops", loops))
    return problems
