"""The ROS-free eRob supervisor against the EtherCAT emulator: configuration read back, logs,
quick stop, the command watchdog in injected time, CSP.

One emulated eRob80:100 for the module; each test brings a supervisor up
(re-scan and re-configuration: config_init resets the line) and shuts it
down, leaving the emulator as it found it.
"""

from __future__ import annotations

import time

import pytest
from ethercat_rig import emulator, wait_truth

from bam_drivers.ethercat import cia402
from bam_drivers.ethercat import drive_models as dm
from bam_drivers.ethercat.master import EthercatBus, JointSpec
from bam_drivers.ethercat.supervisor import ErobSupervisor, JointFrame
from bam_sim.common.commands import JointCommand

TIMEOUT = 30.0  # s, a deadline: reached only when something is wrong
MODEL = dm.get_drive_model("erob80_100")


@pytest.fixture(scope="module")
def emu():
    with emulator(mass=3.1, positions=(0.1,)) as process:
        yield process


class Driver:
    """A supervisor, the log lines it wrote, and a loop that cycles it until a condition."""

    def __init__(self, interface: str, mode: int = cia402.CST, timeout: float = 0.0) -> None:
        self.logs: list[tuple[str, str]] = []
        bus = EthercatBus(interface, [JointSpec("j", MODEL)], mode=mode, frame_timeout=0.005)
        self.sup = ErobSupervisor(bus, [JointFrame(0.0, 1, 2.0, 12.0)], gain=50.0,
                                  enabled=False, command_timeout=timeout,
                                  log=lambda level, text: self.logs.append((level, text)),
                                  now=time.monotonic())
        self.offset = 0.0  # s added to the clock the supervisor sees
        self.until(lambda: self.sup.last is not None, "connected")

    def now(self) -> float:
        return time.monotonic() + self.offset

    def until(self, predicate, what: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting for {what}; {self.logs}"
            self.sup.cycle(self.now())
            time.sleep(0.0005)

    def command(self, goal=None, enable=None, gain=None) -> None:
        self.sup.apply(JointCommand((0,), None if goal is None else (goal,),
                                    None if enable is None else (enable,),
                                    None if gain is None else (gain,)), self.now())

    def state(self):
        return self.sup.last.readings[0].state


def test_configuration_is_read_back(emu):
    driver = Driver(emu.interface)
    config = driver.sup.bus.drives[0].config
    assert (config.rated_current_ma, config.rated_torque_mnm) == \
        (MODEL.rated_current_ma, MODEL.rated_torque_mnm)
    assert (config.gear_ratio, config.counts_per_turn, config.mode) == (100, 1 << 19, 10)
    assert (config.max_current_permille, config.max_torque_permille) == (2000, 2000)
    assert config.abort_connection_option == 2  # disable voltage when the master is lost
    assert config.rx_mapping == tuple(e.mapping for e in dm.RX_ENTRIES)
    assert config.tx_mapping == tuple(e.mapping for e in dm.TX_ENTRIES)
    assert (config.rx_assign, config.tx_assign) == ((0x1600,), (0x1A00,))
    assert config.watchdog_ms == 100.0
    truth = emu.truth()[1]
    assert (truth["abort_connection_option"], truth["watchdog_ms"]) == (2, 100.0)
    assert truth["al_state"] == "OP" and truth["mode"] == 10
    assert driver.sup.shutdown() is True


def test_a_drive_fault_is_logged_once_and_reset_on_request(emu):
    driver = Driver(emu.interface)
    driver.command(goal=0.1, enable=True)
    driver.until(lambda: driver.state() is cia402.State.OPERATION_ENABLED, "enabled")
    emu.fault(1, cia402.OVER_CURRENT)
    driver.until(lambda: driver.sup.health[0].emergencies > 0, "the emergency")
    for _ in range(200):  # the fault stays: more cycles, no more lines
        driver.sup.cycle(driver.now())
    errors = [text for level, text in driver.logs if level == "error"]
    assert len(errors) == 1 and "0x2310 over-current" in errors[0]
    assert driver.sup.health[0].fault.startswith("0x2310")
    assert "0x2310" in driver.sup.health[0].last_emergency
    emu.clear_fault(1)
    driver.command(enable=True)
    driver.until(lambda: driver.state() is cia402.State.OPERATION_ENABLED, "reset, enabled")
    assert driver.sup.health[0].fault == "" and emu.truth()[1]["error_code"] == 0
    assert driver.sup.shutdown() is True


def test_quick_stop_stops_the_torque_until_asked_again(emu):
    driver = Driver(emu.interface)
    driver.command(goal=0.3, enable=True)
    driver.until(lambda: driver.state() is cia402.State.OPERATION_ENABLED, "enabled")
    driver.sup.quick_stop()
    driver.until(lambda: driver.state() is cia402.State.SWITCH_ON_DISABLED, "quick stopped")
    assert not emu.truth()[1]["torque_enable"]
    driver.command(goal=0.3)  # a goal alone does not enable
    for _ in range(50):
        driver.sup.cycle(driver.now())
    assert driver.state() is cia402.State.SWITCH_ON_DISABLED
    driver.command(enable=True)
    driver.until(lambda: driver.state() is cia402.State.OPERATION_ENABLED, "enabled again")
    assert driver.sup.shutdown() is True


def test_command_watchdog_in_injected_time(emu):
    driver = Driver(emu.interface, timeout=0.5)
    driver.command(goal=0.2, enable=True)
    driver.until(lambda: driver.state() is cia402.State.OPERATION_ENABLED, "enabled")
    driver.offset = 0.6  # no command for 0.6 s, as far as the supervisor can tell
    driver.until(lambda: driver.state() is cia402.State.SWITCHED_ON, "watchdog torque off")
    assert driver.sup.watchdog_tripped
    wait_truth(emu, lambda t: not t[1]["torque_enable"], "torque off in the drive")
    driver.command(goal=0.2)
    driver.until(lambda: driver.state() is cia402.State.OPERATION_ENABLED, "torque restored")
    assert driver.sup.shutdown() is True


def test_csp_mode_sends_the_goal_to_the_drive(emu):
    driver = Driver(emu.interface, mode=cia402.CSP)
    driver.command(goal=0.4, enable=True, gain=100.0)
    driver.until(lambda: abs(emu.truth()[1]["position"] - 0.4) < 0.05, "at the goal")
    truth = emu.truth()[1]
    assert truth["mode"] == cia402.CSP and truth["target_position"] == MODEL.counts(0.4)
    assert truth["control"] > 0.0 and driver.sup.last.controls == (0.0,)  # the drive's law
    assert driver.sup.shutdown() is True
