"""The eRob driver and the EtherCAT emulator fail safe: interface names checked before SOEM,
a line that never came up given up on, a re-scan that backs off, emulator options checked,
and the namespace of an emulator killed by SIGKILL reused by the next one.

The emulator tests need root (a network namespace and a veth pair): they skip without it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from ethercat_rig import emulator
from rclpy.parameter import Parameter
from test_drivers_fail_safe import backoff_times

from bam_drivers.emulators.ethercat_client import EmulatorError
from bam_drivers.ethercat.drive_models import get_drive_model
from bam_drivers.ethercat.master import EthercatBus, JointSpec, check_interface_name
from bam_drivers.ethercat.supervisor import ErobSupervisor, JointFrame
from bam_drivers.nodes.erob_node import ErobNode
from bam_sim.common.errors import BamError
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import executable_error

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 30.0  # s, a deadline: reached only when something is wrong
ABSENT = "bamnone0"  # an interface no test creates


@pytest.mark.parametrize("name", ["eth0", "enp3s0f1", "bamec123", "x" * 15, "é" * 7])
def test_interface_names_linux_takes_pass(name):
    assert check_interface_name(name) == name


@pytest.mark.parametrize(("name", "why"), [
    ("x" * 16, "16 bytes, more than 15"), ("x" * 300, "300 bytes"), ("é" * 8, "16 bytes"),
    ("", "empty"), (".", "reserved"), ("..", "reserved"), ("a/b", "'/'"), ("eth0 ", "' '"),
    ("eth0:1", "':'"), ("a\tb", "'\\t'"),
])
def test_names_linux_refuses_are_one_line_errors(name, why):
    with pytest.raises(BamError, match="is not a network interface name") as info:
        check_interface_name(name)
    assert why in str(info.value) and "\n" not in str(info.value)


def test_a_300_character_interface_is_refused_before_soem():
    """SOEM copies the name into a fixed buffer: the executable crashed (exit 139)."""
    argv = ["erob", "--ros-args", "-p", "interface:=" + "x" * 300]
    line = executable_error("bam_drivers.nodes.erob_node", argv, ros_domain(), 60.0)
    assert "is not a network interface name (300 bytes, more than 15)" in line
    with private_context() as context, pytest.raises(BamError, match="300 bytes"):
        ErobNode(context=context, parameter_overrides=[Parameter("interface", value="x" * 300)])


def test_a_line_that_is_down_is_rescanned_with_a_backoff():
    """The loop asks for a cycle every millisecond for 20 simulated seconds."""
    bus = EthercatBus(ABSENT, [JointSpec("pendulum", get_drive_model("erob80_100"))])
    sup = ErobSupervisor(bus, [JointFrame()], gain=25.0, enabled=False, command_timeout=0.0,
                         log=lambda level, text: None, now=0.0)
    for k in range(20_000):
        assert sup.cycle(k * 1e-3) is None
    assert sup.link.stats["attempts"] == len(backoff_times(20.0))
    assert sup.failure is None and "cannot open network interface" in sup.link.state


def test_an_interface_that_never_existed_exits_2_after_connect_timeout():
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain()),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bam_drivers.nodes.erob_node", "--ros-args",
         "-p", f"interface:={ABSENT}", "-p", "connect_timeout:=1.0"],
        env=env, capture_output=True, text=True, timeout=2 * TIMEOUT)
    assert done.returncode == 2, done.stderr
    assert time.monotonic() - start >= 1.0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"erob: error: no connection to the EtherCAT line on {ABSENT} "
                           "within connect_timeout 1 s: cannot open network interface"), last
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("option", "message"), [
    (["--positions", "nan"], "--positions must be a finite number, got nan"),
    (["--cycle-rate", "inf"], "--cycle-rate must be a finite number, got inf"),
    (["--drop", "2"], r"--drop must be in [0, 1], got 2"),
    (["--mass", "-1"], "--mass must be >= 0, got -1"),
    (["--interface", "y" * 40], "is not a network interface name (40 bytes"),
    (["--positions", "zero"], "argument --positions: invalid float value: 'zero'"),
])
def test_bad_emulator_options_are_one_line_errors(option, message):
    done = subprocess.run([sys.executable, "-m", "bam_drivers.emulators.ethercat_emulator",
                           *option], capture_output=True, text=True, timeout=TIMEOUT)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("ethercat_emulator: error: "), done.stderr
    assert message in lines[0]


def test_a_namespace_left_by_a_killed_emulator_is_reused_and_a_live_one_refused():
    interface = "bamstale0"
    first = emulator(interface=interface)
    try:
        with pytest.raises(EmulatorError, match=f"interface {interface} belongs to a running "
                                                f"ethercat_emulator .process {first.pid}:"):
            emulator(interface=interface).stop()
        os.kill(first.pid, signal.SIGKILL)
        first.stop()  # reaps it
        assert os.path.exists(f"/var/run/netns/bam_ecat_{interface}")  # left behind
        with emulator(interface=interface) as second:
            assert second.interface == interface
            assert second.stats()["namespace"] == f"bam_ecat_{interface}"
            removed = [line for line in second.stderr_tail().splitlines()
                       if "left by an emulator that died" in line]
            assert removed == [
                f"ethercat_emulator: removed the namespace bam_ecat_{interface} and veth "
                f"{interface} left by an emulator that died (process {first.pid}); reusing "
                "the names"]
        assert not os.path.exists(f"/var/run/netns/bam_ecat_{interface}")  # a clean stop
    finally:
        first.stop()


def test_a_clean_stop_leaves_nothing_behind():
    """Namespace, veth, control socket and its folder go; so does the lock file of a
    default interface name (bamec<pid>: no other emulator asks for it)."""
    with emulator() as emu:
        interface, control = emu.interface, emu.control
        lock = os.path.join(tempfile.gettempdir(), f"bam_ecat_{interface}.lock")
        assert os.path.exists(lock) and os.path.exists(control)
    assert not os.path.exists(f"/var/run/netns/bam_ecat_{interface}")
    assert not os.path.exists(os.path.dirname(control))
    assert not os.path.exists(lock)


def test_an_interface_that_is_not_an_emulators_veth_is_left_alone():
    with pytest.raises(EmulatorError, match="interface lo exists and is not an emulator's veth"):
        emulator(interface="lo").stop()
    assert os.path.exists("/sys/class/net/lo")
