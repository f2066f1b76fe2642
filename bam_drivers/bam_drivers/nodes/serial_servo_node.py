"""``dynamixel``: Dynamixel servos on a serial bus, publishing what the sim node publishes.

Example::

    ros2 run bam_drivers dynamixel --ros-args -p port:=/dev/ttyUSB0 \\
        -p servo_model:=mx64_p1 -p ids:=[1] -p rate:=500.0

A thin ROS adapter over :class:`bam_drivers.serial_servo.supervisor.SerialServoSupervisor`
(bus cycles, reconnection, command watchdog, torque off): its loop thread runs
one supervised bus cycle per tick at ``rate`` and publishes the servos read in
it on the swap contract of :mod:`bam_sim.common.contract`, stamped just before
the read, plus ``/diagnostics`` about once a second. ``effort`` and
``motor_torque`` are k_t·I where the servo reports its current I (equation 13
of the paper, τ_m = k_t/R·U − k_t²/R·q̇, is k_t·I), with k_t the mean of the
published sets of ``actuator``; NaN without a current reading, because R
differs too much between the sets to estimate torque from the voltage.
``bam/bench_info`` carries the bench parameters, with the input voltage the
first servo measures when ``supply_voltage`` is 0. An actuator of the current law
(``xl330_current``) puts the servos in current-based position control (protocol 2.0
operating mode 5) with Goal Current at its law's current limit, and its ``control`` is
the present current (A) rather than duty·V_in. The torque goes off on
every servo when the node stops (SIGINT, SIGTERM, launch shutdown), read back.
The docs' Dynamixel page (``docs/how-to/dynamixel.md``) says the rest: the bus,
its options and what is counted in the diagnostics.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import replace

from diagnostic_msgs.msg import DiagnosticStatus

from bam_drivers.dynamixel.control_table import TABLES
from bam_drivers.nodes.driver_node import (
    ARM_MASS,
    COMMAND_TIMEOUT,
    CONNECT_TIMEOUT,
    MASS,
    THREAD_PRIORITY,
    DriverNode,
    diagnostic_status,
    driver_main,
    fill_joint,
    mean_kt,
    stamp,
)

# Re-exported (the redundant alias says so): the driver's topics are read from its module.
from bam_drivers.nodes.driver_node import DIAGNOSTICS_TOPIC as DIAGNOSTICS_TOPIC
from bam_drivers.serial_servo.bus import SerialServoBus, ServoCounters
from bam_drivers.serial_servo.control_table import get_table
from bam_drivers.serial_servo.supervisor import Cycle, SerialServoSupervisor, SupplyCheck
from bam_msgs.msg import ActuatorState, ActuatorStateArray
from bam_sim.common.actuator_topics import joint_state
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import ACTUATOR_FILE, Param, declare, declare_actuator
from bam_sim.models.servo.actuator import CURRENT
from bam_sim.models.servo.actuators import driven_by, get_actuator

NODE_NAME = "dynamixel"

PARAMETERS: tuple[Param, ...] = (
    Param("port", "/dev/ttyUSB0", "serial port of the bus (a /dev/serial/by-id/ path "
          "survives re-plugging)", read_only=True),
    Param("baud_rate", 1000000, "baud rate of the bus", read_only=True, low=9600, high=4500000),
    Param("protocol", 0, "Dynamixel protocol 1 or 2 (0 = the servo model's)", read_only=True,
          low=0, high=2),
    Param("servo_model", None, f"control table: {', '.join(TABLES)} (default: the actuator's, "
          "its file's hardware.control_table)", read_only=True),
    Param("ids", [1], "servo ids on the bus", read_only=True),
    Param("joint_names", None, "joint name of each id (default: pendulum for one id, "
          "joint<id> for several)", read_only=True),
    Param("offsets", None, "joint position at servo position 0 (register 2048), rad, one per "
          "id (default zeros)", read_only=True),
    Param("directions", None, "+1 or -1 per id: joint direction vs the servo's (default +1)",
          read_only=True),
    Param("rate", 200.0, "bus cycles (read, write, publish) per second, Hz", read_only=True,
          low=1.0, high=5000.0),
    COMMAND_TIMEOUT,
    Param("gain", None, "initial P gain kp in model units (MX protocol-1 P register; default "
          "the actuator's second Table I gain); change it with /bam/commands", read_only=True,
          low=0.0, high=1.0e4),
    Param("torque_enable_on_start", False, "turn the torque on at start, holding the present "
          "position", read_only=True),
    Param("actuator", "mx64",
          f"bam_sim actuator of the bench ({', '.join(driven_by('dynamixel'))})",
          read_only=True),
    ACTUATOR_FILE,
    MASS,
    ARM_MASS,
    Param("length", 0.15, "distance from the axis to the point mass, m", low=0.001,
          high=100.0),
    Param("supply_voltage", 0.0, "supply voltage for /bam/bench_info, V (0 = measured by the "
          "first servo)", read_only=True, low=0.0, high=1000.0),
    Param("latency_timer_ms", 0.0, "latency timer of the serial adapter, ms, for the packet "
          "timeout (0 = detect: 1 for a pseudo-terminal, the USB adapter's sysfs "
          "latency_timer, else the SDK's 16)", read_only=True, low=0.0, high=1000.0),
    THREAD_PRIORITY,
    CONNECT_TIMEOUT,
)


class SerialServoNode(DriverNode):
    """The driver; keyword arguments go to :class:`rclpy.node.Node`.

    :attr:`lock` guards the commanded state (loop vs callbacks). The class
    attributes bind it to a bus class, its parameters and the bench actuators
    its servos are (:class:`bam_drivers.nodes.feetech_node.FeetechNode`
    binds it to the Feetech bus).
    """

    NAME = NODE_NAME
    PARAMETERS = PARAMETERS
    BUS = SerialServoBus
    DRIVER = "dynamixel"  # the hardware.driver of the actuators it runs
    ACTUATORS = driven_by(DRIVER)
    # Actuators that are one servo at several supplies: the input voltage measured at
    # connection must be the configured one's (none among the Dynamixel servos).
    SUPPLY_VARIANTS: tuple[str, ...] = ()

    UNIT = "servo"
    TORQUE_OFF_LINE = "torque off on every servo; port closed"
    _supervisor: SerialServoSupervisor | None

    # -- set-up (DriverNode) ---------------------------------------------------------

    def _declare(self) -> dict:
        by_name = {p.name: p for p in self.PARAMETERS}
        values, actuator = declare_actuator(
            self, [by_name["ids"], by_name["actuator"], by_name["actuator_file"]])
        if actuator.driver != self.DRIVER:
            raise BamError(f"actuator {actuator.name} is not a servo of the {self.BUS.KIND} "
                           f"driver; give one of {', '.join(self.ACTUATORS)}, or an actuator "
                           f"file with 'hardware: {{driver: {self.DRIVER}}}'")
        self._actuator = actuator
        ids = list(values["ids"])
        defaults = {"joint_names": ["pendulum"] if len(ids) == 1 else [f"joint{i}" for i in ids],
                    "offsets": [0.0] * len(ids), "directions": [1] * len(ids),
                    "gain": float(actuator.gains[1]), "servo_model": actuator.control_table}
        rest = [p for p in self.PARAMETERS if p.name not in values]
        values.update(declare(self, rest, defaults))
        return values

    def _configure(self, v: dict) -> None:
        table = get_table(v["servo_model"], self.BUS.TABLES)
        if v.get("protocol", 0) not in (0, table.protocol):
            raise BamError(f"servo_model {table.name} speaks protocol {table.protocol}, but "
                           f"protocol is {v['protocol']}; set protocol:={table.protocol} or 0")
        bus = self.BUS(v["port"], table, v["ids"], baud_rate=v["baud_rate"],
                           offsets=list(v["offsets"]), directions=list(v["directions"]),
                           latency_timer_ms=v["latency_timer_ms"])
        self._ids = bus.ids
        joints = tuple(v["joint_names"])
        if len(joints) != len(self._ids) or len(set(joints)) != len(joints) or "" in joints:
            raise BamError(f"joint_names must hold {len(self._ids)} different non-empty names "
                           f"(one per id), got {list(joints)}")
        self.joint_names = joints
        self._configure_loop(v)
        self._kt = mean_kt(self._actuator) if table.current is not None else math.nan
        limit = bus.gain_limit()
        if not 0.0 <= v["gain"] <= limit:
            raise BamError(f"gain {v['gain']} is outside [0, {limit:g}], the P-gain register "
                           f"of the {table.title}")
        now = time.monotonic()
        self._supervisor = SerialServoSupervisor(
            bus, gain=float(v["gain"]), enabled=bool(v["torque_enable_on_start"]),
            command_timeout=float(v["command_timeout"]), log=self._log, now=now,
            connect_timeout=float(v["connect_timeout"]), supply=self._supply_check(),
            current_limit=self._current_limit(table))
        self._last_states: dict[int, object] = {}
        self._diag_previous = (now, ({**self._supervisor.link.stats, "bytes": (0, 0)},
                                     {i: ServoCounters() for i in self._ids}))

    def _current_limit(self, table) -> float | None:
        """Goal Current of a current-law actuator (its law's clip), None for position mode."""
        act = self._actuator
        if act.family != CURRENT:
            return None
        if table.current_position_mode is None:
            raise BamError(f"actuator {act.name} runs a current law, but the {table.title} has "
                           "no current-based position mode; give an actuator of its position "
                           "mode")
        if "current_limit" not in act.fixed:
            raise BamError(f"actuator {act.name}: the driver writes Goal Current from "
                           "identification.fixed.current_limit; declare it there (A)")
        return act.fixed["current_limit"]

    def _unit(self) -> str:
        """Its vendor and bus id: neither bus's servos report a serial number."""
        return f"{self.bus.table.vendor} id {self._ids[0]}"

    def _describe(self) -> str:
        return (f"{len(self._ids)} {self.bus.table.title} on {self.bus.port_name} at "
                f"{self.bus.baud_rate} baud, ids {list(self._ids)} -> joints "
                f"{list(self.joint_names)}, {self._rate:g} Hz")

    def _supply_check(self) -> SupplyCheck:
        """The configured actuator among its supply variants (none: no check)."""
        if self._actuator.name not in self.SUPPLY_VARIANTS:
            return SupplyCheck()
        return SupplyCheck(self._actuator.name, {
            name: get_actuator(name).supply_voltage for name in self.SUPPLY_VARIANTS})

    # -- public helpers ------------------------------------------------------------------

    @property
    def bus(self) -> SerialServoBus:
        """The bus (used by the loop thread; read-only elsewhere)."""
        return self._supervisor.bus

    @property
    def stats(self) -> dict[str, int]:
        """Bus cycles and their outcomes, port losses and connections."""
        return self._supervisor.link.stats

    @property
    def connected(self) -> bool:
        return self._supervisor is not None and self.bus.is_open \
            and self._supervisor.link.is_open

    @property
    def _location(self) -> str:
        return self.bus.port_name

    # -- publishing --------------------------------------------------------------------

    def _publish(self, stamp_ns: int, cycle: Cycle) -> float | None:
        """Publish the servos read; all of them in the preallocated messages, else the
        ones read in fresh messages (a partial read must not repeat stale values)."""
        result, command = cycle.result, cycle.command
        if not result.states:
            return None
        topics = self.topics
        if result.ok:
            joint, states, msg = topics.joint_msg, topics.states, topics.state_msg
            rows = range(len(self._ids))
        else:  # the joints read this cycle only
            rows = [i for i, dxl_id in enumerate(self._ids) if dxl_id in result.states]
            joint = joint_state([self.joint_names[i] for i in rows])
            states = [_blank(topics.states[i]) for i in rows]
            msg = ActuatorStateArray(actuators=states)
        stamp(stamp_ns, joint, msg)
        for k, i in enumerate(rows):
            s = result.states[self._ids[i]]
            fill_joint(joint, states[k], k, position=s.position, velocity=s.velocity,
                       torque=self._kt * s.current, goal=command.goals[i],
                       enabled=bool(command.enables[i]), gain=float(command.gains[i]),
                       control=s.current if self._actuator.family == CURRENT else s.control,
                       current=s.current, voltage=s.input_voltage,
                       temperature=s.temperature, error_flags=int(s.hardware_error))
        topics.publish_states(joint, msg)
        self._last_states = dict(result.states)
        return next(iter(result.states.values())).input_voltage

    # -- diagnostics -------------------------------------------------------------------

    def _diagnostics_snapshot(self) -> tuple[dict, dict[int, ServoCounters]]:
        return ({**self.stats, "bytes": self.bus.bytes()},
                {i: replace(c) for i, c in self.bus.counters.items()})

    def _diagnostics(self, now: tuple, before: tuple, window: float) -> list[DiagnosticStatus]:
        """The bus, then each servo."""
        (stats, counters), (stats0, counters0) = now, before
        return [self._bus_status(stats, stats0, window)] + [
            self._servo_status(i, dxl_id, counters[dxl_id], counters0[dxl_id], window)
            for i, dxl_id in enumerate(self._ids)]

    def _bus_status(self, stats: dict, before: dict, window: float) -> DiagnosticStatus:
        delta = {k: stats[k] - before[k] for k in stats if k != "bytes"}
        cycles = max(delta["cycles"], 1)
        tx, rx = (now - then for now, then in zip(stats["bytes"], before["bytes"], strict=True))
        rate = delta["cycles"] / window
        if self._supervisor.link.state != "open":
            level, message = DiagnosticStatus.ERROR, f"port {self._supervisor.link.state}"
        elif rate < 0.9 * self._rate:
            level, message = DiagnosticStatus.WARN, f"{rate:.0f} Hz, below {self._rate:g} Hz"
        elif delta["partial_reads"] or delta["failed_reads"] or delta["port_losses"]:
            level, message = DiagnosticStatus.WARN, "communication errors"
        else:
            level, message = DiagnosticStatus.OK, f"{rate:.0f} Hz"
        values = {
            "port": self.bus.port_name, "port state": self._supervisor.link.state,
            "protocol": self.bus.protocol, "baud rate": self.bus.baud_rate,
            "latency timer (ms)": f"{self.bus.latency_timer_ms:g} "
                                  f"({self.bus.latency_timer_source})",
            "rate target (Hz)": f"{self._rate:g}", "rate achieved (Hz)": f"{rate:.1f}",
            "full reads (Hz)": f"{delta['full_reads'] / window:.1f}",
            "partial reads": stats["partial_reads"], "failed reads": stats["failed_reads"],
            "port losses": stats["port_losses"], "connections": stats["reconnects"],
            "deadline slips": self.slips,
            "tx bytes per cycle": f"{tx / cycles:.1f}",
            "rx bytes per cycle": f"{rx / cycles:.1f}",
            "watchdog": self._supervisor.describe_watchdog(),
            "rejected commands": sum(self._rejections.counts.values()),
        }
        return diagnostic_status(level, f"{self.get_name()}: bus",
                                 f"{self.BUS.KIND.lower()} bus {self.bus.port_name}", message,
                                 values)

    def _servo_status(self, i: int, dxl_id: int, c: ServoCounters, before: ServoCounters,
                      window: float) -> DiagnosticStatus:
        reads = c.reads - before.reads
        timeouts, corrupt = c.timeouts - before.timeouts, c.corrupt - before.corrupt
        failed, status = c.failed - before.failed, c.status_errors - before.status_errors
        rereads = c.rereads - before.rereads
        names = self.bus.hardware_error_names(c.hardware_error)
        if self._supervisor.link.state != "open":
            level, message = DiagnosticStatus.ERROR, "port not open"
        elif c.hardware_error:
            level, message = DiagnosticStatus.ERROR, f"hardware error: {', '.join(names)}"
        elif reads == 0:
            level, message = DiagnosticStatus.ERROR, f"no reply ({c.last_error or 'none'})"
        elif timeouts or corrupt or failed or status or rereads:
            level = DiagnosticStatus.WARN
            message = (f"{timeouts} timeouts, {corrupt} corrupt replies, {rereads} garbled "
                       f"replies read again, {failed} failures, {status} status errors in "
                       f"{window:.1f} s")
        else:
            level, message = DiagnosticStatus.OK, "OK"
        state = self._last_states.get(dxl_id)
        age = time.monotonic() - c.last_error_time if math.isfinite(c.last_error_time) else None
        values = {
            "id": dxl_id, "joint": self.joint_names[i], "model": self.bus.table.title,
            "reads (Hz)": f"{reads / window:.1f}", "timeouts": c.timeouts,
            "corrupt replies": c.corrupt, "garbled replies read again": c.rereads,
            "other failures": c.failed,
            "status errors": c.status_errors, "communication errors": c.errors,
            "last error": c.last_error or "none",
            "last error age (s)": f"{age:.1f}" if age is not None else "",
            "hardware error bits": c.hardware_error,
            "hardware errors": ", ".join(names) or "none",
            "temperature (C)": f"{state.temperature:g}" if state else "",
            "input voltage (V)": f"{state.input_voltage:g}" if state else "",
        }
        return diagnostic_status(level, f"{self.get_name()}: {self.joint_names[i]} (id {dxl_id})",
                                 f"{self.BUS.KIND.lower()} id {dxl_id} on {self.bus.port_name}",
                                 message, values)


def _blank(state: ActuatorState) -> ActuatorState:
    """A fresh ActuatorState with the name and unit of ``state``."""
    return ActuatorState(name=state.name, control_unit=state.control_unit)


def main(args: list[str] | None = None) -> int:
    return driver_main(SerialServoNode, "Dynamixel servos on a serial bus (bam_drivers)", args)


if __name__ == "__main__":
    sys.exit(main())
