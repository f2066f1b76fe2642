"""Faults on the bus: the driver keeps running, reports them in /diagnostics, recovers.

Each fault is injected into the emulator while the driver holds a servo
(torque on), then cleared: the states must keep or start flowing again, the
diagnostics must name the fault, then go back to OK.
"""

from __future__ import annotations

import time

import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from drivers_rig import EMULATOR_PRIORITY, SERIAL_BUSES, Rig, values

from bam_drivers.emulators.client import EmulatorProcess
from bam_testing.ros_context import private_context

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

# Protocol 1.0 and Feetech error byte bit 5, protocol 2.0 hardware error status bit 5.
OVERLOAD = 0x20


@pytest.fixture(scope="module")
def context():
    with private_context() as ctx:
        yield ctx


@pytest.fixture(params=sorted(SERIAL_BUSES))
def bench(request, context):
    options, node, params = SERIAL_BUSES[request.param]
    # At real-time priority: a busy host must not make the servos late, which a whole
    # diagnostics window without errors (recovered) would then never see.
    with EmulatorProcess(**options, seed=1, priority=EMULATOR_PRIORITY) as emulator:
        rig = Rig(context, emulator.port, node=node, **params)
        try:
            rig.wait_ready()
            rig.command(goals=[0.3], enables=[True], gains=[16.0])
            rig.wait_for(lambda: emulator.truth()[1]["torque_enable"], "torque on")
            yield rig, emulator
        finally:
            rig.close()


def servo_status(rig: Rig, since: float) -> DiagnosticStatus | None:
    return rig.status("(id 1)", since)


def wait_status(rig: Rig, since: float, predicate, what: str) -> DiagnosticStatus:
    rig.wait_for(lambda: (s := servo_status(rig, since)) is not None and predicate(s), what)
    return servo_status(rig, since)


def recovered(rig: Rig) -> None:
    """States flow, and a whole diagnostics window without errors says OK."""
    at = time.monotonic()
    rig.wait_for(lambda: rig.states_since(at) > 10, "states after the fault")
    wait_status(rig, at, lambda s: s.level == DiagnosticStatus.OK, "servo OK again")
    bus = rig.status(": bus", at)
    assert bus is not None and values(bus)["port state"] == "open"
    assert rig.node.connected


@pytest.mark.parametrize(("fault", "counter"), [
    ({"drop": 0.5}, "timeouts"),
    ({"corrupt": 0.5}, "corrupt replies"),
    ({"latency": 0.05}, "timeouts"),  # later than the packet timeout (2·10 + 2 ms)
])
def test_communication_faults_are_counted_and_survived(bench, fault, counter):
    rig, emulator = bench
    at = time.monotonic()
    emulator.inject(**fault)
    status = wait_status(rig, at, lambda s: int(values(s)[counter]) > 0,
                         f"{counter} in /diagnostics")
    assert status.level in (DiagnosticStatus.WARN, DiagnosticStatus.ERROR)
    assert values(status)["last error"] in ("timeout", "corrupt")
    during = time.monotonic()
    if "latency" not in fault:  # half of the replies still arrive
        rig.wait_for(lambda: rig.states_since(during) > 10, "states during the fault")
    emulator.inject(drop=0.0, corrupt=0.0, latency=0.0)
    recovered(rig)
    assert emulator.truth()[1]["torque_enable"]  # the servo was held throughout


def test_hardware_error_bits_are_reported(bench):
    rig, emulator = bench
    at = time.monotonic()
    emulator.inject(hardware_error={1: OVERLOAD})
    status = wait_status(rig, at, lambda s: s.level == DiagnosticStatus.ERROR,
                         "hardware error in /diagnostics")
    assert status.message == "hardware error: overload"
    v = values(status)
    assert v["hardware error bits"] == str(OVERLOAD) and v["hardware errors"] == "overload"
    # Per servo, beside its errors: temperature and supply as the servo reports them (its
    # registers hold 1 °C and 0.1 V steps).
    truth = emulator.truth()[1]
    assert float(v["temperature (C)"]) == pytest.approx(truth["temperature"], abs=1.0)
    assert float(v["input voltage (V)"]) == pytest.approx(truth["input_voltage"], abs=0.1)
    rig.wait_for(lambda: rig.actuator_states[-1][1].actuators[0].error_flags == OVERLOAD,
                 "error_flags")
    emulator.inject(hardware_error={1: 0})
    rig.wait_for(lambda: rig.actuator_states[-1][1].actuators[0].error_flags == 0,
                 "error_flags cleared")
    recovered(rig)


def test_port_vanishing_and_returning(bench):
    rig, emulator = bench
    at = time.monotonic()
    emulator.vanish()  # until restore(): the checks below see the port gone, however slow
    rig.wait_for(lambda: (s := rig.status(": bus", at)) is not None
                 and s.level == DiagnosticStatus.ERROR, "port error in /diagnostics")
    bus = rig.status(": bus", at)
    assert "reconnecting" in values(bus)["port state"]
    assert servo_status(rig, at).level == DiagnosticStatus.ERROR
    back = time.monotonic()
    emulator.restore()
    # How soon is the backoff's (its cap: test_drivers_supervisor and test_drivers_fail_safe,
    # on a simulated clock); here the wait only catches a port never reopened.
    rig.wait_for(lambda: rig.states_since(back) > 0, "states after the port returned")
    assert rig.node.stats["port_losses"] >= 1
    # The link's history in words on /diagnostics: the loss and the connection after it.
    rig.wait_for(lambda: (s := rig.status(": bus", back)) is not None
                 and int(values(s)["connections"]) >= 2, "the reconnection on /diagnostics")
    assert int(values(rig.status(": bus", back))["port losses"]) >= 1
    recovered(rig)
    # Gains and torque were written again on the new port.
    assert emulator.truth()[1]["torque_enable"] and emulator.truth()[1]["gain"] == 16.0
