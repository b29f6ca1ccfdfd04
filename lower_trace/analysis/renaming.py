"""Names in compared texts: the kernel's own name, and consistent renamings of identifiers.

Two rules, both on whole identifiers, never on substrings:

- **The kernel's name.** Compiling the same body under another name changes every name
  TileLang and TVM derive from it (``gemm_kernel``, ``__tvm_ffi_gemm``, ``gemm_A_shape``,
  ``"gemm.A is expected ..."``). Those identifiers of the second kernel are written as the
  first's -- an identifier ``P + name + S`` (``P`` empty or ending in ``_``, ``S`` empty or
  starting with ``_``) becomes ``P + other_name + S`` only when that identifier occurs in the
  first kernel's texts and the original does not. A name qualified by a namespace
  (``T.gemm``, ``tl::gemm_ss``) is TileLang's or TVM's, never the kernel's, and stays --
  except ``Module.name``, TVMScript's reference to a function of the module itself.
- **Up to renaming.** Two texts are the same up to renaming when they tokenise alike and
  their identifiers correspond one to one (``A_shared`` / ``A_s``, ``k`` / ``k_1``), with
  the words of the languages (keywords, types, dtypes, namespaces), qualified names and
  called functions required to be equal.

The report's "compare with..." applies the first rule too (assets/compare.js: the same
algorithm, held to the same answer by a test).
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Identifiers, numbers (never renamed: 1e5, 0x1f, 128f are one token), everything else.
_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|(\d[\w.]*)")
SELF_MODULE = "Module"  # TVMScript names the module's own functions Module.<name>

# Words of TVMScript, Python, C/C++/CUDA and TVM's dtypes: equal on both sides or not at all.
_C_WORDS = """
auto bool break case char const constexpr continue default do double else enum extern false float for goto if
inline int long namespace nullptr register return short signed sizeof static struct switch template true typedef
typename union unsigned void volatile while uint uint1 uint2 uint3 uint4 int1 int2 int3 int4 float1 float2 float3
float4 half half2 half_t bfloat16_t float_e4m3_t float_e5m2_t size_t dim3 blockIdx threadIdx blockDim gridDim
__global__ __device__ __host__ __shared__ __constant__ __restrict__ __forceinline__ __launch_bounds__ __syncthreads
__syncwarp extern_shared include define pragma unroll
""".split()
_TVM_WORDS = """
T I R tl tvm tir tirx cute std cutlass Module handle float16 float32 float64 bfloat16 int8 int16 int32 int64 uint8
uint16 uint32 uint64 bool float8_e4m3 float8_e5m2 None True False self def class return for in if else with as
""".split()
RESERVED = frozenset([*keyword.kwlist, *_C_WORDS, *_TVM_WORDS])


def _qualifier(text: str, start: int) -> str | None:
    """The namespace an identifier at `start` is qualified by (`T` in T.gemm, `tl` in tl::gemm_ss),
    "" for another qualified name (a.b) or a part of a path (tl_templates/cuda/reduce.h), None when
    it stands alone."""
    if start >= 1 and text[start - 1] == "/":
        return ""
    if start >= 1 and text[start - 1] == ".":
        end = start - 1
    elif start >= 2 and text[start - 2 : start] == "::":
        end = start - 2
    else:
        return None
    begin = end
    while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] == "_"):
        begin -= 1
    return text[begin:end]


def identifiers(texts: Iterable[str]) -> set[str]:
    """The identifiers the texts use on their own (not as a namespace's: T.gemm does not count
    as a use of gemm, Module.gemm_kernel does): the names a kernel's name may have become."""
    found: set[str] = set()
    for text in texts:
        for match in _IDENT.finditer(text):
            qualifier = _qualifier(text, match.start())
            if qualifier is None or qualifier == SELF_MODULE:
                found.add(match.group(0))
    return found


def kernel_renames(name_a: str, name_b: str, vocabulary_a: set[str], vocabulary_b: set[str]) -> dict[str, str]:
    """{identifier of B: identifier of A} for the names derived from B's kernel name (see the module doc)."""
    if not name_a or not name_b or name_a == name_b:
        return {}
    renames: dict[str, str] = {}
    for word in vocabulary_b:
        at = word.find(name_b)
        while at >= 0:
            before, after = word[:at], word[at + len(name_b) :]
            if (not before or before.endswith("_")) and (not after or after.startswith("_")):
                theirs = before + name_a + after
                if theirs in vocabulary_a and word not in vocabulary_a:
                    renames[word] = theirs
                break
            at = word.find(name_b, at + 1)
    return renames


def rename(text: str, renames: Mapping[str, str], in_strings: bool = True) -> str:
    """text with each whole identifier in renames replaced, unless a namespace qualifies it (or,
    with in_strings=False, it stands inside a "string")."""
    if not renames:
        return text
    quoted = _quoted_spans(text) if not in_strings else None

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        new = renames.get(word)
        if new is None or (quoted is not None and _inside(quoted, match.start())):
            return word
        qualifier = _qualifier(text, match.start())
        return new if qualifier is None or qualifier == SELF_MODULE else word

    return _IDENT.sub(swap, text)


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _STRING.finditer(text)]


def _inside(spans: list[tuple[int, int]], at: int) -> bool:
    import bisect

    i = bisect.bisect_right(spans, (at, 1 << 62)) - 1
    return i >= 0 and spans[i][0] < at < spans[i][1]


_MEMBER = re.compile(r"^    (?=\S)", re.MULTILINE)  # a line that starts a member of `class Module:`
_DEF = re.compile(r"^    def ([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def sorted_functions(text: str) -> str:
    """A printed module with its functions in name order. TVM prints a module's functions in the
    order of its function map, which follows the names' hashes: the same kernel under two names
    prints `main_kernel, main` but `gemm, gemm_kernel`."""
    head, sep, body = text.partition("\nclass Module:\n")
    if not sep:
        return text
    starts = [m.start() for m in _MEMBER.finditer(body)]
    members: list[tuple[str, str]] = []  # (name, text) of each function, decorators included
    i = 0
    while i < len(starts):
        j = i
        while j < len(starts) and body[starts[j] : starts[j] + 5] == "    @":
            j += 1  # decorators belong to the def after them
        end = starts[j + 1] if j + 1 < len(starts) else len(body)
        chunk = body[starts[i] : end]
        found = _DEF.search(chunk)
        members.append((found.group(1) if found else "", chunk))
        i = j + 1
    if len(members) < 2 or body[: starts[0]].strip():
        return text
    ordered = [chunk.rstrip("\n") for _, chunk in sorted(members, key=lambda member: member[0])]
    ending = body[len(body.rstrip("\n")) :]
    return head + sep + body[: starts[0]] + "\n\n".join(ordered) + ending


@dataclass(frozen=True)
class Tokens:
    """A text cut into identifiers and the text between them; fixed[i]: identifier i must stay as it
    is; quoted[i]: it stands inside a "string" (a map key, a target's "kind": "c", an op's "max")."""

    words: tuple[str, ...]
    fixed: tuple[bool, ...]
    between: tuple[str, ...]  # len(words) + 1 pieces
    quoted: tuple[bool, ...] = ()


def tokens(text: str) -> Tokens:
    words: list[str] = []
    fixed: list[bool] = []
    quoted: list[bool] = []
    between: list[str] = []
    spans = _quoted_spans(text)
    last = 0
    for match in _TOKEN.finditer(text):
        if match.group(1) is None:
            continue  # a number: part of the text between identifiers
        word = match.group(1)
        between.append(text[last : match.start()])
        words.append(word)
        called = text[match.end() : match.end() + 40].lstrip(" ").startswith("(")
        fixed.append(word in RESERVED or _qualifier(text, match.start()) is not None or called)
        quoted.append(_inside(spans, match.start()))
        last = match.end()
    between.append(text[last:])
    return Tokens(tuple(words), tuple(fixed), tuple(between), tuple(quoted))


def correspondence(a: str, b: str) -> dict[str, str] | None:
    """{B's identifier: A's} when b is a with identifiers renamed one to one (identity pairs left
    out: {} means equal), None when no such renaming makes them equal.

    The renaming is read off the identifiers outside strings; a word inside a string must be the
    same on both sides or renamed as that identifier is (a map keyed by buffer names), so that a
    loop variable `c` does not make the target's "kind": "c" renamable, nor a reduction's "max"
    another one's "sum". Printers sort some maps by their keys (``"tl.smem_alignment_map":
    {"A_shared": 512, ...}``), so a renaming can reorder entries: when the texts do not line up
    token by token, the renaming is read off the lines that do, B is renamed, and the two are
    compared with such maps' entries in key order."""
    if a == b:
        return {}
    lines_a, lines_b = a.splitlines(), b.splitlines()
    # Token by token needs what lies between the names to be the same: a regex pass tells most
    # texts that differ apart without tokenising them.
    if _between(a) == _between(b):
        found = _token_by_token(_text_tokens(a), _text_tokens(b))
        if found is not None:
            return {wb: wa for wb, wa in found.items() if wb != wa}
    if len(lines_a) != len(lines_b):
        return None  # neither token by token nor line by line
    mapping: dict[str, str] = {}
    for la, lb in zip(lines_a, lines_b, strict=False):
        if la == lb:
            continue
        pairs = _token_by_token(_line_tokens(la), _line_tokens(lb))
        for wb, wa in (pairs or {}).items():
            if mapping.setdefault(wb, wa) != wa:
                return None
    if len(set(mapping.values())) != len(mapping):
        return None  # two names of B would become one of A: not a renaming
    renamed = _sorted_maps(rename(b, mapping, in_strings=False), mapping).split("\n")
    compared = _sorted_maps(a).split("\n")
    # Line by line, as the whole texts' tokens would be compared (no token, string or map
    # spans a line feed), stopping at the first line that differs otherwise than renamed.
    if len(compared) != len(renamed):
        return None
    for la, lb in zip(compared, renamed, strict=True):
        if la != lb and _token_by_token(_line_tokens(la), _line_tokens(lb), mapping) is None:
            return None
    return {wb: wa for wb, wa in mapping.items() if wb != wa}


@functools.lru_cache(maxsize=64)
def _between(text: str) -> str:
    """The text without anything that looks like a name (a letter in a number too): the same for
    two texts whose Tokens.between are (a number's letters are in both)."""
    return _IDENT.sub("", text)


# Whole texts' tokens, kept for a while: a pass's output is the next one's input, and a comparison
# reads each text more than once.
_text_tokens = functools.lru_cache(maxsize=32)(tokens)
# Lines' tokens: the lines that differ between two texts differ alike along a pipeline.
_line_tokens = functools.lru_cache(maxsize=4096)(tokens)


def _token_by_token(ta: Tokens, tb: Tokens, renamed: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The renaming (B -> A) that makes tb ta, from the identifiers outside strings; None if none does.
    With `renamed`, tb is already renamed by it: outside strings words must be equal, and a word in a
    string equal or one `renamed` turns into A's."""
    if len(ta.words) != len(tb.words) or ta.between != tb.between or ta.quoted != tb.quoted:
        return None
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    strings: list[tuple[str, str]] = []
    for wa, wb, fa, fb, inside in zip(ta.words, tb.words, ta.fixed, tb.fixed, ta.quoted or (False,) * len(ta.words), strict=False):
        if inside:
            if wa != wb:
                strings.append((wa, wb))
            continue
        if fa or fb or renamed is not None:
            if wa != wb:
                return None
            continue
        if forward.setdefault(wb, wa) != wa or backward.setdefault(wa, wb) != wb:
            return None
    names = renamed if renamed is not None else forward
    if any(names.get(wb) != wa for wa, wb in strings):
        return None
    return forward


# A one-line map with string keys and flat values: {"A_shared": 512, "B_shared": 1024}
_FLAT_MAP = re.compile(r'\{("[^"\n]*": [^{}\n,]+(?:, "[^"\n]*": [^{}\n,]+)*)\}')
_KEY = re.compile(r'^"([A-Za-z_][A-Za-z0-9_]*)"')


def _sorted_maps(text: str, keys: Mapping[str, str] | None = None) -> str:
    """Such maps with their entries in key order; `keys` renames keys that are names first."""

    names: Mapping[str, str] = keys or {}

    def entries(match: re.Match[str]) -> str:
        items = match.group(1).split(", ")
        if names:
            items = [_KEY.sub(lambda k: f'"{names.get(k.group(1), k.group(1))}"', item) for item in items]
        return "{" + ", ".join(sorted(items)) + "}"

    return _FLAT_MAP.sub(entries, text)
