"""faux.harness.procs: the processes under a process, from /proc."""

import os
import subprocess
import sys
import time

import pytest

from faux.harness.procs import cmdline, descendants

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_a_child_and_its_child_are_found_parent_first_and_gone_ones_read_empty():
    code = ("import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)  # grandchild']);"
            " time.sleep(30)")
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        for _ in range(200):  # until the grandchild has started
            found = descendants(child.pid)
            if found and b"grandchild" in cmdline(found[-1]):
                break
            time.sleep(0.05)
        assert len(found) == 1 and b"grandchild" in cmdline(found[0])
        mine = descendants(os.getpid())
        assert mine.index(child.pid) < mine.index(found[0])
        assert b"time.sleep(30)" in cmdline(child.pid)
    finally:
        for pid in descendants(child.pid):
            os.kill(pid, 9)
        child.kill()
        child.wait()
    assert descendants(child.pid) == [] and cmdline(child.pid) == b""
