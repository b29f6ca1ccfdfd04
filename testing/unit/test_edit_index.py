"""The edit index's entries (lower_trace/edits/entries.py): parsed from index.json / index.log
lines of every format, written back as they were read, and the files a run of working-copy
decisions leaves byte for byte as the lower-trace before the typed entry wrote them
(testing/fixtures/edits-index, written by that version from `scenario` below). No TileLang."""

import json
import os
import pathlib

import pytest

from lower_trace.edits.entries import Group, IndexEntry
from lower_trace.edits.working_copies import EditStore
from support import FIXTURES

FIXTURE = pathlib.Path(FIXTURES) / "edits-index"
HEX = "0123456789abcdef" * 2

ENTRY = {
    "kernel": "gemm", "signature": "gemm(A:[64]:float32)", "role": "device", "language": "cuda",
    "variant": HEX, "skeleton": HEX[::-1], "reference": "f" * 32, "config": "",
    "constants": {"0": "T.float32(5.0)", "12": "128"}, "order": 3, "taken": 7, "failed": "a" * 32, "from": ["b" * 32],
}  # fmt: skip


def test_an_entry_reads_into_attributes_and_writes_back_as_it_was_read():
    entry = IndexEntry.parse("gemm-3fa9c1.cu", ENTRY)
    assert entry is not None
    assert entry.group == Group("gemm", "gemm(A:[64]:float32)", "device", "cuda")
    assert (entry.variant, entry.order, entry.taken, entry.failed, entry.history) == (HEX, 3, 7, "a" * 32, ("b" * 32,))
    assert entry.constants == ((0, "T.float32(5.0)"), (12, "128"))  # places in numeric order
    assert entry.to_json() == ENTRY
    assert json.dumps(entry.to_json(), sort_keys=True) == json.dumps(ENTRY, sort_keys=True)


def test_an_entry_older_than_taken_and_failed_reads_as_taken_when_made_and_not_failed():
    old = {key: value for key, value in ENTRY.items() if key not in ("taken", "failed")}
    entry = IndexEntry.parse("gemm.cu", old)
    assert entry is not None and (entry.taken, entry.failed) == (3, "")
    assert entry.to_json() == {**old, "taken": 3, "failed": ""}


@pytest.mark.parametrize(
    "name, change",
    [
        ("../gemm.cu", {}),  # a path, not a name inside edits/
        (".hidden", {}),
        (7, {}),
        ("gemm.cu", {"kernel": None}),
        ("gemm.cu", {"config": 1}),
        ("gemm.cu", {"order": "3"}),
        ("gemm.cu", {"variant": "not-hex"}),
        ("gemm.cu", {"reference": "F" * 32}),
        ("gemm.cu", {"constants": {"x": "1"}}),
        ("gemm.cu", {"constants": {"1": 1}}),
        ("gemm.cu", {"constants": ["1"]}),
        ("gemm.cu", {"from": "b" * 32}),
        ("gemm.cu", {"from": [1]}),
        ("gemm.cu", {"taken": 1.5}),
        ("gemm.cu", {"failed": "not-hex"}),
    ],
)
def test_a_hand_broken_entry_is_skipped(name, change):
    data = {**ENTRY, **change}
    data = {key: value for key, value in data.items() if value is not None}
    assert IndexEntry.parse(name, data) is None


def test_a_copy_from_before_variants_still_matches_no_variant():
    got = IndexEntry.migrate("scale|scale(A:[64]:float32)|device", {"file": "scale.c", "kernel": "scale", "role": "device", "language": "c"}, -2)
    assert got is not None
    name, entry = got
    assert name == "scale.c" and entry.group == Group("scale", "scale(A:[64]:float32)", "device", "c")
    assert (entry.variant, entry.order, entry.taken, entry.history, entry.constants) == ("", -2, -2, (), ())
    assert IndexEntry.migrate("other|x|device", {"file": "scale.c", "kernel": "scale", "role": "device"}, 0) is None
    assert IndexEntry.migrate("scale|x|device", {"file": "../scale.c", "kernel": "scale", "role": "device"}, 0) is None


def _tir(factor, plus=False):
    body = f"A[i] * T.float32({factor})" + (" + T.float32(1.0)" if plus else "")
    return f'@T.prim_func\ndef scale(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32")):\n    for i in range(64):\n        C[i] = {body}\n'


def scenario(root):
    """Variants, a host copy, a config, a failed edit, index.log folded into index.json, changed code
    taking copies over: what `lower-trace edits` then lists, as plain values."""
    store = EditStore(root)
    for factor in (3.0, 5.0, 7.0):
        store.resolve("scale", "sig", "device", "c", f"// scale {factor}\n", tir=_tir(factor))
    store.resolve("scale", "sig", "host", "c", "// host\n", tir=_tir(3.0))
    store.resolve("scale", "sig", "device", "c", "// cfg\n", tir=_tir(3.0), config='{"tl.disable_vectorize": true}')
    copy = os.path.join(root, "edits", "scale.c")
    for _ in range(31):  # each mark and unmark is a line of index.log: 64 of them fold it into index.json
        store.compiled(copy, True, "// broken\n")
        store.compiled(copy, False, "// broken\n")
    with open(copy, "w") as handle:
        handle.write("// mine\n")
    store.resolve("scale", "sig", "device", "c", "// scale 3.0\n", tir=_tir(3.0))
    store.compiled(copy, True)
    later = EditStore(root)  # another run: the kernel's code changed
    later.resolve("scale", "sig", "device", "c", "// plus 5.0\n", tir=_tir(5.0, plus=True))
    rows = EditStore(root).entries()
    plain = [row if isinstance(row, dict) else {key: getattr(value, "value", value) for key, value in vars(row).items()} for row in rows]
    return [{**row, "path": os.path.relpath(row["path"], root), "stale": row["stale"] or None} for row in plain]


def test_the_index_files_are_as_the_lower_trace_before_wrote_them(tmp_path):
    rows = scenario(str(tmp_path))
    edits = tmp_path / "edits"
    for name in ("index.json", "index.log"):
        assert (edits / name).read_bytes() == (FIXTURE / name).read_bytes(), name
    assert rows == json.loads((FIXTURE / "listing.json").read_text())
    assert {row["state"] for row in rows} == {"as generated", "edited"} and {row["stale"] for row in rows} == {None, "compile failed", "code changed"}


def test_an_index_written_before_loads_and_takes_up_where_it_was(tmp_path):
    edits = tmp_path / "edits"
    edits.mkdir()
    for name in ("index.json", "index.log"):
        (edits / name).write_bytes((FIXTURE / name).read_bytes())
    store = EditStore(str(tmp_path))
    rows = store.entries()  # no copy on disk: every one missing, each still listed
    assert len(rows) == len(json.loads((FIXTURE / "listing.json").read_text())) and {row.state.value for row in rows} == {"missing"}
    outcome = store.resolve("scale", "sig", "device", "c", "// plus 5.0\n", tir=_tir(5.0, plus=True))
    assert os.path.basename(outcome.path) in {row.file for row in rows} and outcome.created  # its copy, written again
