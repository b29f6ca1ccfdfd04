"""`lower-trace report` on a terminal: a progress bar on stderr, erased when done; nothing on a pipe."""

import os
import pty
import re
import subprocess
import sys


def _report(trace_path, out, stderr):
    command = [sys.executable, "-m", "lower_trace", "report", trace_path, "-o", out]
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=300)


def test_report_shows_a_bar_on_a_terminal_and_nothing_on_a_pipe(real_trace, tmp_path):
    total = len(real_trace.kernels)
    leader, follower = pty.openpty()
    try:
        done = _report(real_trace.path, str(tmp_path / "tty.html"), follower)
    finally:
        os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the other end is closed and everything was read
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    text = seen.decode()
    assert done.returncode == 0 and done.stdout == f"file://{tmp_path / 'tty.html'}\n"  # the answer stands alone
    frames = re.findall(r"\rwriting the report \[([#.]+)\] (\d+)/(\d+) kernels", text)
    counts = [int(n) for _, n, _ in frames]
    assert counts[0] == 0 and counts[-1] == total and counts == sorted(counts)
    assert {int(of) for _, _, of in frames} == {total} and frames[-1][0] == "#" * 30
    assert text.endswith("\r") and text.rstrip("\r").split("\r")[-1].strip() == ""  # erased when done
    piped = _report(real_trace.path, str(tmp_path / "pipe.html"), subprocess.PIPE)
    assert piped.returncode == 0 and piped.stderr == ""
    assert open(tmp_path / "tty.html").read() == open(tmp_path / "pipe.html").read()
