"""An emulator forked from the tests' warm process behaves as one started from nothing.

bam_testing.module_forks forks the tests' emulators (conftest.py puts it in): these
compare the two ways on what a test reads from an emulator process: its refusal, its exit
code after a stop, its cleanup when whoever started it is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from conftest import EMULATORS
from test_drivers_emulator_lifecycle import wait_exit

from bam_drivers.emulators.client import EmulatorError, EmulatorProcess
from bam_drivers.emulators.emulator_process import EmulatorChild
from bam_testing import module_forks

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, a deadline: reached only when something is wrong


class Started(EmulatorProcess):
    """The emulator as a node or a user starts it: a new interpreter."""

    launch = staticmethod(subprocess.Popen)


class Forked(EmulatorProcess):
    launch = staticmethod(module_forks.launcher(EMULATORS))


WAYS = {"started": Started, "forked": Forked}


def test_the_conftest_forks_the_tests_emulators():
    assert EmulatorChild.launch is not subprocess.Popen
    with EmulatorProcess() as emulator:
        assert isinstance(emulator._process, module_forks.ForkedProcess)
        with open(f"/proc/{emulator.pid}/stat") as stat:  # the fork server's child
            assert int(stat.read().split()[3]) != os.getpid()


def test_a_refusal_reads_the_same():
    said = {}
    for way, cls in WAYS.items():
        with pytest.raises(EmulatorError) as refused:
            cls(protocol=2, servo_model="mx64_p1")  # a protocol 1 model on protocol 2
        said[way] = str(refused.value)
    assert "stderr" in said["started"] and said["forked"] == said["started"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_it_with_the_same_code_and_cleanup(signum):
    codes = {}
    for way, cls in WAYS.items():
        emulator = cls(protocol=2, servo_model="xm430_w350", ids=(1, 2))
        port = emulator.port
        assert set(emulator.truth()) == {1, 2}
        os.kill(emulator.pid, signum)
        codes[way] = emulator._process.wait(timeout=TIMEOUT)
        emulator.stop()
        assert not os.path.lexists(port), way
    assert codes == {"started": 0, "forked": 0}


PARENT = f"""
from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.emulators.emulator_process import EmulatorChild
from bam_testing import module_forks
EmulatorChild.launch = staticmethod(module_forks.launcher({EMULATORS!r}))
emulator = EmulatorProcess()
print(emulator.pid, emulator.port, module_forks._fork_server(()).process.pid, flush=True)
input()  # until killed
"""


def test_a_forked_emulator_and_its_server_end_when_the_test_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        pid, port, server = parent.stdout.readline().split()
        assert os.path.lexists(port)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=TIMEOUT)
        assert wait_exit(int(server), TIMEOUT), "the fork server outlived its test"
        assert wait_exit(int(pid), TIMEOUT), "the emulator outlived its test"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    assert not os.path.lexists(port)
