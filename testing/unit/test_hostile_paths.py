"""Hostile kernel names never write outside the edits folder (edits/working_copies.py), on the
files themselves. Real compiles under hostile script and kernel names: integration/test_guarantees.py."""

import glob
import os

HOSTILE_NAMES = ["../../escape", "/abs/olute", 'quo"te\'s', "nul\x00byte", "bidi\u202eevil", "x" * 300, "..", ".", "", "con\nsole"]


def test_hostile_kernel_names_never_write_outside(tmp_path):
    from lower_trace.edits.working_copies import EditStore

    store = EditStore(str(tmp_path / "script"))
    for index, name in enumerate(HOSTILE_NAMES):
        outcome = store.resolve(name, f"sig{index}", "device", "cuda", f"// {name!r}\n")
        assert os.path.realpath(outcome.path).startswith(os.path.realpath(store.root) + os.sep)
    # Everything written is inside the edits folder (and nothing else appeared around it).
    written = {os.path.realpath(p) for p in glob.glob(str(tmp_path / "**"), recursive=True, include_hidden=True)}
    inside = os.path.realpath(store.root)
    assert written - {os.path.realpath(tmp_path), os.path.realpath(tmp_path / "script")} == {p for p in written if p == inside or p.startswith(inside + os.sep)}
    files = {e.file for e in store.entries()}
    assert len(files) == len(HOSTILE_NAMES)  # none collapsed into another
