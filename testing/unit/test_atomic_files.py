"""The one atomic write (store/files.py) and the writers built on it: a file is replaced whole or
left as it was, and no temporary is left behind. No compiler needed."""

import os
import shutil

import pytest

from lower_trace.render.report.from_trace import write_report
from lower_trace.store.files import replacing, write_atomically
from support import FIXTURES

FIXTURE = os.path.join(FIXTURES, "trace-format-1")


def leftovers(folder):
    return [name for name in os.listdir(folder) if name.endswith(".tmp")]


def test_a_write_replaces_the_file_whole(tmp_path):
    path = str(tmp_path / "copy.cu")
    write_atomically(path, "old\n")
    write_atomically(path, "new\r\nline\n")  # line ends as given, not translated
    assert open(path, "rb").read() == b"new\r\nline\n" and leftovers(tmp_path) == []


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path):
    path = str(tmp_path / "copy.cu")
    write_atomically(path, "old\n")
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate cannot be UTF-8: the encoder fails mid-write
        write_atomically(path, "new " * 10000 + "\udcff")
    assert open(path, encoding="utf-8").read() == "old\n" and leftovers(tmp_path) == []
    write_atomically(path, "raw \udcff\n", errors="surrogateescape")  # the working copies' reading of bytes
    assert open(path, "rb").read() == b"raw \xff\n"


def test_a_missing_folder_is_an_error_and_creates_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomically(str(tmp_path / "absent" / "x.html"), "text")
    assert os.listdir(tmp_path) == []


def test_replacing_renames_only_when_the_block_ends_normally(tmp_path):
    path = str(tmp_path / "report.html")
    write_atomically(path, "old")
    with pytest.raises(KeyboardInterrupt), replacing(path) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path)  # beside it: the rename never crosses file systems
        with open(tmp, "w") as handle:
            handle.write("half")
        raise KeyboardInterrupt
    assert open(path).read() == "old" and leftovers(tmp_path) == []


def test_an_interrupted_report_rebuild_leaves_the_old_report_and_no_open_file(tmp_path):
    """Ctrl-C during `lower-trace report` (seen here in its progress callback, after the first
    kernel's block is written): the old report stays, the temporary is gone, its file closed."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    out = tmp_path / "out.html"
    out.write_text("the old report")
    fds = len(os.listdir("/proc/self/fd"))

    def progress(done, total):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_report(str(run), str(out), progress=progress)
    assert out.read_text() == "the old report" and leftovers(tmp_path) == []
    assert len(os.listdir("/proc/self/fd")) == fds
    path = write_report(str(run), str(out))  # and a rebuild that runs through replaces it
    assert path == str(out) and out.read_text().startswith("<!doctype html>")
