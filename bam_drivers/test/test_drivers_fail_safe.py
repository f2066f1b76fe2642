"""The serial drivers fail safe: they back off while a port is away, give up on one that never
answered, refuse a port another driver holds, and a servo or supply other than configured.

The ROS-free parts run on a simulated clock (the supervisor's ``now``); the nodes and the
executables against the emulator (bam_drivers.emulators.serial_servo_emulator), whose ground
truth says whether the torque was ever on.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from drivers_rig import EMULATOR_PRIORITY, TIMEOUT, emulator_of
from rclpy.parameter import Parameter

from bam_drivers.emulators.client import EmulatorProcess
from bam_drivers.nodes.feetech_node import FeetechNode
from bam_drivers.nodes.serial_servo_node import SerialServoNode
from bam_drivers.serial_servo import port_lock
from bam_drivers.serial_servo.bus import SerialServoBus
from bam_drivers.serial_servo.supervisor import SerialServoSupervisor
from bam_drivers.supervisor import RETRY_MAX, RETRY_MIN, ConfigurationError
from bam_sim.common.commands import JointCommand
from bam_testing.ros_context import private_context, ros_domain
from bam_testing.ros_graph import wait_for

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

NOBODY = 65534  # uid of a process without CAP_SYS_ADMIN, to meet the tty's exclusive mode


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


def backoff_times(window: float) -> list[float]:
    """When the attempts of a link that never opens come, within ``window`` s."""
    times, wait = [0.0], RETRY_MIN
    while times[-1] + wait < window:
        times.append(times[-1] + wait)
        wait = min(2.0 * wait, RETRY_MAX)
    return times


def supervisor(port: str, now: float = 0.0, **kwargs) -> SerialServoSupervisor:
    # 50 ms for a status: room for a busy machine delaying the emulator's replies.
    bus = SerialServoBus.named(port, "mx64_p1", [1], latency_timer_ms=50.0)
    return SerialServoSupervisor(bus, gain=8.0, enabled=False, command_timeout=0.0,
                               log=lambda level, text: None, now=now, **kwargs)


def driver(context, node=SerialServoNode, **params) -> SerialServoNode:
    params = {"rate": 200.0, "command_timeout": 0.0, "latency_timer_ms": 10.0, **params}
    return node(context=context, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()])


def executable(module: str, *params: str) -> subprocess.Popen:
    """A driver executable (``-m bam_drivers.nodes.<module>``) with ``params``; its stderr
    piped."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain()),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    return subprocess.Popen(
        [sys.executable, "-m", f"bam_drivers.nodes.{module}", "--ros-args",
         *(x for p in params for x in ("-p", p))],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen) -> tuple[int, str]:
    """Exit code and stderr of ``process``, killed if it outlives the test timeout."""
    try:
        _, err = process.communicate(timeout=2 * TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, err


# -- backoff -------------------------------------------------------------------------------

def test_an_absent_port_is_retried_with_a_backoff_not_every_cycle(tmp_path):
    """The loop asks for a cycle every millisecond for 20 simulated seconds: the supervisor
    tries the port after 0.1, 0.2, 0.4, ... s, then every RETRY_MAX s, not 20000 times."""
    sup = supervisor(str(tmp_path / "absent"))
    for k in range(20_000):
        assert sup.cycle(k * 1e-3) is None
    assert sup.link.stats["attempts"] == len(backoff_times(20.0))
    assert sup.failure is None  # connect_timeout 0: for ever
    assert "No such file" in sup.link.state


def test_a_never_seen_port_ends_the_supervisor_at_its_connect_timeout(tmp_path):
    port = str(tmp_path / "ttyTYPO")
    sup = supervisor(port, now=100.0, connect_timeout=3.0)
    k = 0
    while sup.failure is None:
        now = 100.0 + k * 1e-3
        assert now <= 103.0 + 1e-9
        sup.cycle(now)
        k += 1
    assert now == pytest.approx(103.0, abs=1e-9)  # the last attempt at the deadline
    assert f"servo ids [1] on {port} within connect_timeout 3 s" in str(sup.failure)
    attempts = sup.link.stats["attempts"]
    for k in range(1000):  # given up: no more attempts
        sup.cycle(now + k * 1e-2)
    assert sup.link.stats["attempts"] == attempts


def test_a_port_that_vanished_after_it_worked_is_retried_for_ever():
    with EmulatorProcess(priority=EMULATOR_PRIORITY) as emulator:
        sup = supervisor(emulator.port, connect_timeout=1.0e6)
        clock = Clock()
        wait_for(lambda: sup.cycle(clock.step(0.01)) is not None, "connected", TIMEOUT)
        sup.link.connect_timeout = 1.0  # from now on, a never-seen port would be given up
        emulator.vanish(None)
        wait_for(lambda: sup.cycle(clock.step(0.01)) is None and not sup.bus.is_open,
                 "port lost", TIMEOUT)
        for _ in range(100):  # 100 simulated seconds, far past connect_timeout
            assert sup.cycle(clock.step(1.0)) is None
        assert sup.failure is None and sup.link.stats["attempts"] > 30
        emulator.restore()
        wait_for(lambda: sup.cycle(clock.step(2.0)) is not None, "back", TIMEOUT)
        assert sup.link.retry == pytest.approx(0.1)  # the backoff starts over
        sup.shutdown()


def test_a_stop_after_a_lost_link_still_turns_the_torque_off():
    """The bus went silent long enough for the link to count as lost (the port closed, to
    be reopened), then answers again: the stop opens it once more for the torque off."""
    with EmulatorProcess(priority=EMULATOR_PRIORITY) as emulator:
        sup = supervisor(emulator.port)
        clock = Clock()
        sup.apply(JointCommand((0,), torque_enables=(True,)), clock.now)
        wait_for(lambda: sup.cycle(clock.step(0.01)) is not None
                 and emulator.truth()[1]["torque_enable"], "torque on", TIMEOUT)
        emulator.inject(drop=1.0)
        wait_for(lambda: sup.cycle(clock.step(0.1)) is None and not sup.bus.is_open,
                 "the link lost", TIMEOUT)
        emulator.inject(drop=0.0)
        assert sup.shutdown() is True
        assert not emulator.truth()[1]["torque_enable"]
        assert sup.shutdown() is None  # once: a node stops twice (release, destroy)
        again = supervisor(emulator.port)  # and a port that is gone is said to be so
        wait_for(lambda: again.cycle(clock.step(0.01)) is not None, "connected", TIMEOUT)
        emulator.vanish(None)
        wait_for(lambda: again.cycle(clock.step(0.1)) is None and not again.bus.is_open,
                 "the port lost", TIMEOUT)
        assert again.shutdown() is False


def test_a_stop_waits_for_the_cycle_in_progress_and_nothing_reopens_the_port_after_it():
    """A loop thread that did not stop in time (a busy host, a long reconnection) still
    holds the port: the torque off waits for its cycle (two users of one port read each
    other's replies), and the loop's next cycle does not reopen it."""
    with EmulatorProcess(priority=EMULATOR_PRIORITY) as emulator:
        sup = supervisor(emulator.port)
        clock = Clock()
        sup.apply(JointCommand((0,), torque_enables=(True,)), clock.now)
        wait_for(lambda: sup.cycle(clock.step(0.01)) is not None
                 and emulator.truth()[1]["torque_enable"], "torque on", TIMEOUT)
        reading, go_on = threading.Event(), threading.Event()
        read_state = sup.bus.read_state

        def held_up_read():
            reading.set()
            go_on.wait(TIMEOUT)
            return read_state()

        sup.bus.read_state = held_up_read
        loop = threading.Thread(target=sup.cycle, args=(clock.step(0.01),))
        loop.start()
        assert reading.wait(TIMEOUT)
        confirmed: list = []
        stop = threading.Thread(target=lambda: confirmed.append(sup.shutdown()))
        stop.start()
        stop.join(0.2)
        assert stop.is_alive() and not confirmed  # waiting for the cycle
        go_on.set()
        loop.join(TIMEOUT)
        stop.join(TIMEOUT)
        assert confirmed == [True] and not emulator.truth()[1]["torque_enable"]
        assert sup.cycle(clock.step(10.0)) is None and not sup.bus.is_open


class Clock:
    """A simulated monotonic clock, stepped by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def step(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def test_the_node_sleeps_between_attempts_and_a_signal_still_ends_it_at_once(context, tmp_path):
    node = driver(context, port=str(tmp_path / "absent"), connect_timeout=0.0)
    try:
        stats = node.stats
        wait_for(lambda: stats["attempts"] >= 3, "3 attempts", TIMEOUT)
        ticks = node.tick_count
        wait_for(lambda: stats["attempts"] >= 6, "6 attempts", TIMEOUT)
        # Attempts 3 to 6 are 2.2 s apart at least: 200 Hz ticks would be 440; sleeping in
        # 0.1 s slices, about 25.
        assert node.tick_count - ticks < 60
    finally:
        node.destroy_node()
    process = executable("serial_servo_node", f"port:={tmp_path / 'absent'}",
                         "connect_timeout:=0.0")
    try:
        wait_for(lambda: "retrying in" in process.stderr.readline(), "a failed attempt",
                 TIMEOUT)
        process.send_signal(signal.SIGINT)
    finally:
        code, err = finished(process)
    assert code == 128 + signal.SIGINT, err


@pytest.mark.parametrize(("module", "program"), [("serial_servo_node", "dynamixel"),
                                                 ("feetech_node", "feetech")])
def test_a_port_that_never_existed_exits_2_after_connect_timeout(tmp_path, module, program):
    port = tmp_path / "ttyTYPO"
    start = time.monotonic()
    code, err = finished(executable(module, f"port:={port}", "connect_timeout:=1.0"))
    assert code == 2, err
    assert time.monotonic() - start >= 1.0
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"{program}: error: no connection to servo ids [1] on {port} "
                           "within connect_timeout 1 s: cannot open"), err
    assert "connect_timeout:=0.0" in last and "Traceback" not in err


# -- one driver per port ---------------------------------------------------------------------

def test_a_second_driver_on_a_port_is_refused_naming_the_first(context):
    with EmulatorProcess(priority=EMULATOR_PRIORITY) as emulator:
        first = driver(context, port=emulator.port, torque_enable_on_start=True)
        try:
            wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on", TIMEOUT)
            code, err = finished(executable("serial_servo_node", f"port:={emulator.port}"))
            assert code == 2, err
            last = err.strip().splitlines()[-1]
            assert last.startswith(f"dynamixel: error: the Dynamixel port {emulator.port} is "
                                   f"in use by process {os.getpid()} ("), err
            assert first.connected and first.failure is None
            # Any other program meets the tty's exclusive mode (root bypasses it).
            slave = os.path.realpath(emulator.port)
            os.chmod(slave, 0o666)
            assert open_as_nobody(slave) == errno.EBUSY
        finally:
            first.destroy_node()
        assert not emulator.truth()[1]["torque_enable"]
        assert open_as_nobody(slave) == 0  # the exclusive mode left with the driver
        # The port is free again: a new supervisor connects (within TIMEOUT: a busy host
        # may make the first attempt's reply late). Shut down whatever happens, so that a
        # failure here holds no claim on a tty name a later emulator may get again.
        again, clock = supervisor(emulator.port), Clock()
        try:
            wait_for(lambda: again.cycle(clock.step(0.01)) is not None, "connected again",
                     TIMEOUT)
            assert again.link.is_open
        finally:
            again.shutdown()


def test_a_port_closed_to_be_reopened_stays_this_drivers():
    """Between a lost link's close and its reopen the port is still this driver's: a
    second driver started then is refused, naming it; after the first one's shutdown the
    port is free."""
    with EmulatorProcess(priority=EMULATOR_PRIORITY) as emulator:
        first = supervisor(emulator.port)
        second = supervisor(emulator.port).bus
        try:
            clock = Clock()
            wait_for(lambda: first.cycle(clock.step(0.01)) is not None, "connected", TIMEOUT)
            first.bus.close()  # what a lost link does until the backoff's reopen
            with pytest.raises(ConfigurationError) as refused:
                second.open()
            assert f"is in use by process {os.getpid()} (" in str(refused.value)
            assert not second.is_open
            first.shutdown()
            second.open()
            assert second.is_open
        finally:  # no claim outlives the test, failed or not
            first.shutdown()
            if second.is_open:
                second.release()


def test_drivers_with_their_own_lock_folders_do_not_exclude_each_other(tmp_path,
                                                                       monkeypatch):
    """BAM_LOCK_DIR: a claim in one folder refuses a second driver with the same folder,
    and not one with another (two test sessions at once, a container). Claims are taken
    on a path that is no tty: the lock file is all a claim is."""
    port = str(tmp_path / "ttyClaimed")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    monkeypatch.setenv(port_lock.LOCK_DIR_VARIABLE, str(tmp_path / "a"))
    first = port_lock.Claim(port, "Dynamixel")
    first.take()
    assert port_lock.lock_file(port).parent == tmp_path / "a"
    with pytest.raises(ConfigurationError, match=f"is in use by process {os.getpid()} "):
        port_lock.Claim(port, "Dynamixel").take()
    monkeypatch.setenv(port_lock.LOCK_DIR_VARIABLE, str(tmp_path / "b"))
    other = port_lock.Claim(port, "Dynamixel")
    other.take()  # another folder: not refused
    other.release()
    first.release()
    monkeypatch.setenv(port_lock.LOCK_DIR_VARIABLE, str(tmp_path / "missing"))
    with pytest.raises(ConfigurationError, match="cannot create the lock file .*missing.*: "
                                                 "No such file or directory; make its folder "
                                                 "writable, or name another in BAM_LOCK_DIR"):
        port_lock.Claim(port, "Dynamixel").take()


def open_as_nobody(path: str) -> int:
    """errno of opening ``path`` from a process of an unprivileged user (0: opened)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to open the port as another user")
    code = ("import os, sys\nos.setgid(65534); os.setuid(65534)\n"
            f"try:\n    os.close(os.open({path!r}, os.O_RDWR | os.O_NOCTTY))\n"
            "except OSError as e:\n    sys.exit(e.errno)\n")
    return subprocess.run([sys.executable, "-c", code], timeout=TIMEOUT).returncode


# -- the servo and the supply configured ----------------------------------------------------

@pytest.mark.parametrize(("bus", "emulated", "params", "message"), [
    ("protocol1", {}, {"servo_model": "mx106_p1", "actuator": "mx106"},
     "is model number 310, not MX-106 (protocol 1.0) (320); set servo_model:=mx64_p1"),
    ("feetech", {"supply_voltage": 7.4}, {"node": FeetechNode, "actuator": "sts3215_12v",
                                          "servo_model": "sts3215_12v"},
     "measures 7.4 V, but actuator sts3215_12v runs at 12 V; set actuator:=sts3215"),
    ("feetech", {"supply_voltage": 12.0, "physics": "sts3215_12v:m1"},
     {"node": FeetechNode, "actuator": "sts3215"},
     "measures 12 V, but actuator sts3215 runs at 7.4 V; set actuator:=sts3215_12v"),
])
def test_another_servo_or_supply_is_refused_and_the_torque_never_enabled(
        context, bus, emulated, params, message):
    params = dict(params)
    node_class = params.pop("node", SerialServoNode)
    with emulator_of(bus, **emulated, priority=EMULATOR_PRIORITY) as emulator:
        node = driver(context, node_class, port=emulator.port, torque_enable_on_start=True,
                      **params)
        try:
            assert node.failed.wait(TIMEOUT), "the driver did not give up"
            assert isinstance(node.failure, ConfigurationError)
            assert message in str(node.failure)
            assert not node.connected
        finally:
            node.destroy_node()
        truth = emulator.truth()[1]
    assert not truth["torque_ever_enabled"] and not truth["torque_enable"]


def test_the_emulator_tells_a_torque_that_was_on(context):
    """The check above can fail: a driver that enables the torque is seen."""
    with EmulatorProcess(priority=EMULATOR_PRIORITY) as emulator:
        node = driver(context, port=emulator.port, torque_enable_on_start=True)
        try:
            wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on", TIMEOUT)
        finally:
            node.destroy_node()
        truth = emulator.truth()[1]
    assert truth["torque_ever_enabled"] and not truth["torque_enable"]
