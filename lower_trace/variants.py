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


def _scan(text: str) -> tuple[list[list[str]], list[Literal]]:
    """Per line, its significant tokens (literals masked); and every literal, in order."""
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
            for i, j in zip(range(i1, i2), range(j1, j2)):
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
    """Positions where variants of one code have other literals."""
    if len(constants) < 2:
        return []
    width = min(len(c) for c in constants)
    return [p for p in range(width) if len({c[p] for c in constants}) > 1]


def describe(text: str, constants: tuple[str, ...], positions: list[int], limit: int = 3) -> str:
    """The literals at `positions`, with a little of the code around them, as this
    variant has them: ``A[i] * T.float32(5.0)``."""
    _, literals = _scan(text)
    if not positions or len(literals) != len(constants):
        return ""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    snippets: list[str] = []
    for line in sorted({literals[p].line for p in positions if p < len(literals)}):
        start = line_starts[line]
        end = line_starts[line + 1] - 1 if line + 1 < len(line_starts) else len(text)
        # This line as the variant has it, and where its differing literals are.
        pieces, spans, at = [], [], start
        for index, lit in enumerate(literals):
            if lit.line != line:
                continue
            pieces.append(text[at : lit.start])
            offset = sum(len(piece) for piece in pieces)
            pieces.append(constants[index])
            if index in positions:
                spans.append((offset, offset + len(constants[index])))
            at = lit.end
        pieces.append(text[at:end])
        rendered = "".join(pieces)
        snippets.extend(_around(rendered, spans))
    unique = list(dict.fromkeys(snippets))
    shown = "; ".join(unique[:limit])
    return shown + (f" (+{len(unique) - limit} more)" if len(unique) > limit else "")


def _around(line: str, spans: list[tuple[int, int]], before: int = 24, after: int = 1) -> list[str]:
    """Short pieces of `line` around each span; spans close together share one."""
    out: list[str] = []
    groups: list[list[int]] = []
    for s, e in spans:
        if groups and s - groups[-1][1] <= before:
            groups[-1][1] = e
        else:
            groups.append([s, e])
    indent = len(line) - len(line.lstrip())
    for s, e in groups:
        left = max(indent, s - before)
        right = min(len(line), e + after)
        piece = line[left:right].strip()
        out.append(("…" if left > indent else "") + piece + ("…" if right < len(line.rstrip()) else ""))
    return out


def first_own_line(text: str, other: str, width: int = 60) -> str:
    """The first line of `text` that `other` does not have: what this code does differently."""
    theirs = {line.strip() for line in other.splitlines()}
    for line in text.splitlines():
        line = line.strip()
        if line and line not in theirs:
            return line if len(line) <= width else line[: width - 1] + "…"
    return ""
