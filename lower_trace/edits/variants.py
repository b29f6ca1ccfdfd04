"""Kernel variants: which compile of a kernel is which, decided from what the user wrote.

A *variant* is one kernel as handed to lowering: its TIR text (plus the target and
pass configs, which change the generated code too). Variants of one kernel (other
constants, block sizes, stages, autotune configs) print the same code with other
literals, so the text splits in two:

- the **skeleton**: the text with every numeric literal masked, i.e. the code;
- the **constants**: the literals, in order.

Two compiles are the same variant when their texts are equal; they are variants of
the same code when their skeletons are equal. When the code changes (the user edits
the kernel), literals are matched across the change by aligning the two skeletons
(lines first, tokens inside changed lines): ``align`` says which literal of
the old code is which literal of the new one, so a new variant can be paired with
the old variant it succeeds. Pure Python; no tvm import.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import re
from dataclasses import dataclass

MASK = "\x00"  # stands for one literal in a skeleton (never in a normalised text)

_TOKEN = re.compile(
    r"""(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<nl>\n)
    |(?P<space>[ \t\r\f\v]+)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
# What a printer may write that differs between two identical runs: object addresses.
_ADDRESS = re.compile(r"\b(at|object) 0x[0-9a-fA-F]+")
_VALUE_END = ("name", "num", "str")  # a '-' after these is a binary minus


def normalise(text: str) -> str:
    """The text with what can differ between identical runs blanked."""
    text = text.replace(MASK, "\\x00").replace("\r\n", "\n")
    return _ADDRESS.sub(r"\1 0x?", text)


@dataclass(frozen=True)
class Literal:
    value: str
    start: int  # offsets in the normalised text
    end: int
    line: int  # 0-based line number


@functools.lru_cache(maxsize=32)
def _scan(text: str) -> tuple[list[list[str]], list[Literal]]:
    """Per line, its significant tokens (literals masked); and every literal, in order.
    (Cached: callers only read what it returns.)"""
    lines: list[list[str]] = [[]]
    literals: list[Literal] = []
    prev_kind, prev_text = "", ""
    pending_minus = -1  # offset of a unary '-' just seen
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        value = match.group()
        if kind == "space":
            pending_minus = -1
            continue
        if kind == "nl":
            lines.append([])
            prev_kind, prev_text, pending_minus = "", "", -1
            continue
        if kind == "num":
            start = match.start()
            if pending_minus >= 0 and pending_minus == start - 1:
                start = pending_minus
                lines[-1].pop()  # the '-' belongs to the literal
            literals.append(Literal(text[start : match.end()], start, match.end(), len(lines) - 1))
            lines[-1].append(MASK)
            pending_minus = -1
        else:
            unary = value == "-" and not (prev_kind in _VALUE_END or prev_text in (")", "]", "}"))
            pending_minus = match.start() if unary else -1
            lines[-1].append(value)
        prev_kind, prev_text = kind, value
    return lines, literals


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class Variant:
    key: str  # what tells variants apart: the hash of the normalised text and the config
    skeleton: str  # the code: the hash of the text with its literals masked
    constants: tuple[str, ...]  # the literals, in order
    text: str  # the normalised text
    text_key: str  # the hash of the normalised text alone
    config: str  # target and pass configs: like constants, they make other variants of one code


@functools.lru_cache(maxsize=16)
def analyse(text: str, config: str = "") -> Variant:
    """Key, skeleton and constants of one kernel's TIR text (host and device ask twice)."""
    normal = normalise(text)
    lines, literals = _scan(normal)
    masked = "\n".join(" ".join(tokens) for tokens in lines)
    text_key = _digest(normal)
    key = _digest(f"{normal}\n{MASK}{config}") if config else text_key
    return Variant(key, _digest(masked), tuple(lit.value for lit in literals), normal, text_key, config)


def source_skeleton(code: str) -> str:
    """The hash of generated source with its literals masked (for entries that have no TIR)."""
    lines, _ = _scan(normalise(code))
    return _digest("\n".join(" ".join(tokens) for tokens in lines))


@dataclass(frozen=True)
class Alignment:
    pairs: tuple[tuple[int, int], ...]  # (old literal index, new literal index)
    similarity: float  # 0..1: how much of the two codes' lines match


@functools.lru_cache(maxsize=64)
def align(old_text: str, new_text: str) -> Alignment:
    """Which literal of the old code is which literal of the new one.

    The skeletons are aligned line by line; inside lines that changed, token by
    token, so a literal keeps its partner when something is added around it
    (``A[i] * T.float32(3.0)`` -> ``A[i] * T.float32(3.0) + T.float32(1.0)``).
    Literals in code that has no counterpart have no pair.
    """
    old_lines, _ = _scan(old_text)
    new_lines, _ = _scan(new_text)
    old_at, new_at = _offsets(old_lines), _offsets(new_lines)
    pairs: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, [tuple(t) for t in old_lines], [tuple(t) for t in new_lines], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=False):
                pairs.extend((old_at[i] + k, new_at[j] + k) for k in range(old_lines[i].count(MASK)))
        elif op == "replace":
            old_tokens = [tok for line in old_lines[i1:i2] for tok in line]
            new_tokens = [tok for line in new_lines[j1:j2] for tok in line]
            old_ids = _literal_ids(old_tokens, old_at[i1])
            new_ids = _literal_ids(new_tokens, new_at[j1])
            inner = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
            for block in inner.get_matching_blocks():
                for k in range(block.size):
                    if old_tokens[block.a + k] == MASK:
                        pairs.append((old_ids[block.a + k], new_ids[block.b + k]))
    return Alignment(tuple(pairs), matcher.ratio())


def _offsets(lines: list[list[str]]) -> list[int]:
    """The index of each line's first literal."""
    out, count = [], 0
    for tokens in lines:
        out.append(count)
        count += tokens.count(MASK)
    return out


def _literal_ids(tokens: list[str], first: int) -> list[int]:
    ids, count = [], first
    for tok in tokens:
        ids.append(count)
        if tok == MASK:
            count += 1
    return ids


def differing(constants: list[tuple[str, ...]]) -> list[int]:
    """Where variants of one code have other literals: one place per parameter (places
    whose values vary together across the variants, like every use of one block size,
    count once; the first is taken)."""
    if len(constants) < 2:
        return []
    width = min(len(c) for c in constants)
    seen: dict[tuple[str, ...], int] = {}
    for p in range(width):
        values = tuple(c[p] for c in constants)
        if len(set(values)) > 1:
            seen.setdefault(values, p)
    return sorted(seen.values())


def describe(text: str, constants: tuple[str, ...], positions: list[int], limit: int = 5) -> str:
    """The literals at `positions` as this variant has them, each in the expression
    around it: ``A[i] * T.float32(5.0)``, ``T.parallel(32)``."""
    _, literals = _scan(text)
    if not positions or len(literals) != len(constants):
        return ""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    snippets: list[str] = []
    for position in positions:
        line = literals[position].line
        start = line_starts[line]
        end = line_starts[line + 1] - 1 if line + 1 < len(line_starts) else len(text)
        # The line as this variant has it, and where the literal is in it.
        pieces, at, span = [], start, (0, 0)
        for index, lit in enumerate(literals):
            if lit.line == line:
                pieces.append(text[at : lit.start])
                offset = sum(len(piece) for piece in pieces)
                pieces.append(constants[index])
                if index == position:
                    span = (offset, offset + len(constants[index]))
                at = lit.end
        pieces.append(text[at:end])
        snippets.append(_expression("".join(pieces), *span))
    unique = list(dict.fromkeys(snippets))
    shown = "; ".join(unique[:limit])
    return shown + (f" (+{len(unique) - limit} more)" if len(unique) > limit else "")


_CLOSE = {"(": ")", "[": "]", "{": "}"}


def _expression(line: str, s: int, e: int, reach: int = 40) -> str:
    """The call or subscript around line[s:e] (with the operand before it, or the key
    it is the value of), shortened: ``A[i] * T.float32(3.0)``, ``T.thread_binding(32, ...)``."""
    depth, opened = 0, -1
    for k in range(s - 1, max(-1, s - reach - 1), -1):
        if line[k] in ")]}":
            depth += 1
        elif line[k] in "([{":
            if depth == 0:
                opened = k
                break
            depth -= 1
    if opened < 0:
        left = max(len(line) - len(line.lstrip()), s - 16)
        return ("..." if left > len(line) - len(line.lstrip()) else "") + line[left:e].lstrip() + ("..." if e < len(line.rstrip()) else "")
    left = _name_start(line, opened)
    # An operand before it (`A[i] * `), or the key it is the value of (`"tl.launch_threads": `).
    before = re.search(r'(?:(?:[A-Za-z_][\w.]*)(?:\[[^\[\]]*\])?\s[*+/%-]\s|"[^"]*":\s)$', line[:left])
    if before:
        left = before.start()
    depth, closed = 0, -1
    for k in range(opened + 1, len(line)):
        if line[k] in "([{":
            depth += 1
        elif line[k] in ")]}":
            if depth == 0:
                closed = k
                break
            depth -= 1
    if closed < 0 or closed - e > 12:  # a long rest: the literal, then an ellipsis
        tail = ", ..." if line[e : e + 1] == "," else "..."
        return line[left:e] + tail + _CLOSE[line[opened]]
    return line[left : closed + 1]


def _name_start(line: str, at: int) -> int:
    while at > 0 and (line[at - 1].isalnum() or line[at - 1] in "_."):
        at -= 1
    return at


def _code_lines(text: str, constants: tuple[str, ...] | None) -> list[tuple[str, str]]:
    """Each non-blank line as (its code, literals masked; the line as this variant has it)."""
    lines, _ = _scan(text)
    shown = (with_literals(text, constants) if constants is not None else text).split("\n")
    return [(" ".join(tokens), shown[i].strip()) for i, tokens in enumerate(lines) if tokens and i < len(shown)]


def _short(line: str, width: int = 60) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def other_code(own: list[tuple[str, str]], others: list[list[tuple[str, str]]], limit: int = 3) -> str:
    """What tells one code from each of the others: lines of its own that an other lacks (the
    line that tells it from the most others first, one line where none of them has it), else a
    line that other has and it lacks (``without ...``). Lines are compared as code (literals
    masked). Two codes never get the same words -- one of them names a line it has that the
    other lacks -- unless a line was cut short or the limit reached (edits/working_copies.py then adds
    the variant's key)."""
    mine = {code for code, _ in own}
    theirs = [{code for code, _ in lines} for lines in others]
    words: list[str] = []
    left = list(range(len(others)))
    while left and len(words) < limit:
        # The own line told apart from the most codes still left (the first such line).
        best, count, chosen = "", 0, ""
        for code, line in own:
            n = sum(code not in theirs[k] for k in left)
            if n > count:
                best, count, chosen = line, n, code
        if not count:
            break
        words.append(_short(best))
        left = [k for k in left if chosen in theirs[k]]
    for k in left[: max(0, limit - len(words))]:  # codes holding every line of this one
        extra = next((line for code, line in others[k] if code not in mine), "")
        if extra:
            words.append(f"without {_short(extra)}")
    return "; ".join(dict.fromkeys(words))


def with_literals(text: str, constants: tuple[str, ...]) -> str:
    """`text` with its literals replaced by `constants` (a variant's own TIR, from its family's)."""
    _, literals = _scan(text)
    if len(literals) != len(constants):
        return text
    pieces, at = [], 0
    for literal, value in zip(literals, constants, strict=False):
        pieces.append(text[at : literal.start])
        pieces.append(value)
        at = literal.end
    pieces.append(text[at:])
    return "".join(pieces)


def _own_first(constants: tuple[str, ...], family: list[tuple[str, ...]], positions: list[int]) -> tuple[list[int], int]:
    """The places where this variant's literal is not the family's most common one come
    first: shown always, they tell it apart (only one variant can have all common values)."""
    def common(p: int) -> str:
        values = [c[p] for c in family if p < len(c)]
        return max(dict.fromkeys(values), key=values.count)

    own = [p for p in positions if p < len(constants) and constants[p] != common(p)]
    return own + [p for p in positions if p not in own], len(own)


def tell_apart(members: list[tuple[str, str, str | None, tuple[str, ...] | None, str]]) -> dict[str, str]:
    """What tells each copy of one kernel (name, buffers, role) apart from the others, by name.

    members: (name, skeleton, TIR text, constants, config). Copies of one code differ in
    their literals, shown with a little code around them, or in their config; a copy of
    other code names what tells its code from each other code (other_code).
    """
    if len(members) < 2:
        return {}
    families: dict[str, list[tuple[str, str, str | None, tuple[str, ...] | None, str]]] = {}
    for member in members:
        families.setdefault(member[1], []).append(member)
    # Each code's lines, as its first member with a stored TIR has them.
    firsts = {key: next((m for m in f if m[2] is not None), None) for key, f in families.items()}
    lines_of = {key: _code_lines(m[2], m[3]) for key, m in firsts.items() if m is not None and m[2] is not None}
    out = {}
    for name, skeleton, text, constants, config in members:
        if text is None or constants is None:
            continue
        family = families[skeleton]
        words = []
        if len(family) > 1:
            known = [m[3] for m in family if m[3] is not None]
            positions, own_count = _own_first(constants, known, differing(known))
            words.append(describe(text, constants, positions, limit=max(5, own_count)))
            if len({m[4] for m in family}) > 1:
                words.append(config)
        # Other code: what tells this variant's own TIR (not its family's) from each other code.
        other = [lines for key, lines in lines_of.items() if key != skeleton]
        own = other_code(_code_lines(text, constants), other) if other else ""
        if own:
            words.append(f"other code: {own}")
        out[name] = "; ".join(word for word in words if word)
    return out
