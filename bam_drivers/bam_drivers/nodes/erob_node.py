"""``erob``: eRob80 drives on EtherCAT (CiA 402), publishing what the sim node publishes.

Example::

    ros2 run bam_drivers erob --ros-args -p interface:=eth0 \\
        -p drive_models:=[erob80_100] -p rate:=1000.0 -p mass:=3.1

A thin ROS adapter over :class:`bam_drivers.ethercat.supervisor.ErobSupervisor`
(EtherCAT master over pysoem, CiA 402, the host-side current law of the
paper in cyclic synchronous torque mode, recovery): its loop thread runs one
supervised bus cycle per tick at ``rate`` and publishes the joints read in
it on the swap contract of :mod:`bam_sim.common.contract`, stamped just
before the exchange, plus ``/diagnostics`` about once a second (link, lost
frames, working-counter errors, each slave's AL state and status code, its
CiA 402 state, fault 0x603F and emergencies by name). ``control`` is the
current the law asks (A), ``current`` the drive's measured current 0x6078,
``effort`` and ``motor_torque`` k_t·I with the mean k_t of the published
sets of ``actuator``, ``error_flags`` the drive's error code 0x603F.
Joints are matched to slaves by ``slave_positions`` (0: the next slave
with the drive model's vendor/product id). The torque goes off on every
drive when the node stops (SIGINT, SIGTERM, launch shutdown): disable
operation, then SAFE-OP, read back; a drive whose master stops without that
disables itself when its process-data watchdog (``sm_watchdog``) expires.
"""

from __future__ import annotations

import sys
import time

from diagnostic_msgs.msg import DiagnosticStatus

from bam_drivers.ethercat import cia402
from bam_drivers.ethercat import registers as reg
from bam_drivers.ethercat.drive_models import DRIVE_MODELS, get_drive_model
from bam_drivers.ethercat.master import EthercatBus, JointSpec
from bam_drivers.ethercat.supervisor import Counters, Cycle, ErobSupervisor, JointFrame
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
from bam_sim.common.errors import BamError
from bam_sim.common.node_parameters import Param, actuator_parameter, declare
from bam_sim.models.servo.actuator import CURRENT

NODE_NAME = "erob"
MODES = {"cst": cia402.CST, "csp": cia402.CSP}
# Share of a window's cycles that may lose their frame or working counter before the line is
# reported degraded: a host without real-time scheduling misses a frame now and then.
ERROR_SHARE = 0.02

PARAMETERS: tuple[Param, ...] = (
    Param("interface", "eth0", "network interface of the EtherCAT line", read_only=True),
    Param("drive_models", ["erob80_100"], f"drive model of each joint: {', '.join(DRIVE_MODELS)}",
          read_only=True),
    Param("slave_positions", None, "slave position on the line of each joint, 1-based; 0 = "
          "the next slave with the model's vendor/product id (default all 0)", read_only=True),
    Param("joint_names", None, "joint name of each drive (default: pendulum for one, "
          "joint<k> for several)", read_only=True),
    Param("offsets", None, "joint position at drive position 0, rad, one per joint "
          "(default zeros)", read_only=True),
    Param("directions", None, "+1 or -1 per joint: joint direction vs the drive's (default +1)",
          read_only=True),
    Param("mode", "cst", "cst: host current law, target torque 0x6071 (the paper's control); "
          "csp: goal to target position 0x607A, the drive's own law", read_only=True),
    Param("rate", 1000.0, "bus cycles (exchange, control, publish) per second, Hz",
          read_only=True, low=1.0, high=10000.0),
    COMMAND_TIMEOUT,
    Param("gain", None, "initial gain kp of the current law, A/rad (default the actuator's "
          "second Table I gain); change it with /bam/commands", read_only=True, low=0.0,
          high=1.0e4),
    Param("torque_enable_on_start", False, "enable the drives at start, holding the present "
          "position", read_only=True),
    Param("actuator", None, "bam_sim actuator of the bench (default: the first drive model)",
          read_only=True),
    MASS,
    ARM_MASS,
    Param("length", 0.5, "distance from the axis to the point mass, m", low=0.001, high=100.0),
    Param("supply_voltage", 0.0, "supply voltage for /bam/bench_info, V (0 = the DC link "
          "voltage the first drive measures)", read_only=True, low=0.0, high=1000.0),
    Param("sm_watchdog", 0.1, "process-data watchdog of each drive's ESC, s: the drive "
          "disables itself when no frame came for this long (0 = off)", read_only=True,
          low=0.0, high=6.5),
    Param("frame_timeout", 0.002, "longest wait for a frame to come back, s", read_only=True,
          low=0.0001, high=0.1),
    THREAD_PRIORITY,
    CONNECT_TIMEOUT,
)


class ErobNode(DriverNode):
    """The driver; keyword arguments go to :class:`rclpy.node.Node`."""

    NAME = NODE_NAME
    PARAMETERS = PARAMETERS
    UNIT = "drive"
    TORQUE_OFF_LINE = ("torque off on every drive (operation disabled, SAFE-OP), read back; "
                       "EtherCAT master closed")
    _supervisor: ErobSupervisor | None

    # -- set-up (DriverNode) ---------------------------------------------------------

    def _declare(self) -> dict:
        by_name = {p.name: p for p in self.PARAMETERS}
        values = declare(self, [by_name["drive_models"]])
        models = [get_drive_model(m) for m in values["drive_models"]]
        if not models:
            raise BamError("drive_models is empty; give one drive model per joint")
        self._models = models
        # Each drive model is the actuator of the same name (the registry's driver "erob").
        self._drive_actuators = [actuator_parameter(m.name) for m in models]
        n = len(models)
        defaults = {
            "slave_positions": [0] * n,
            "joint_names": ["pendulum"] if n == 1 else [f"joint{k + 1}" for k in range(n)],
            "offsets": [0.0] * n, "directions": [1] * n, "actuator": models[0].name,
            "gain": float(self._drive_actuators[0].gains[1])}
        rest = [p for p in self.PARAMETERS if p.name not in values]
        values.update(declare(self, rest, defaults))
        return values

    def _configure(self, v: dict) -> None:
        n = len(self._models)
        for key in ("slave_positions", "joint_names", "offsets", "directions"):
            if len(v[key]) != n:
                raise BamError(f"{key} must hold {n} value(s) (one per drive model), got "
                               f"{list(v[key])}")
        joints = tuple(v["joint_names"])
        if len(set(joints)) != n or "" in joints:
            raise BamError(f"joint_names must hold {n} different non-empty names, got "
                           f"{list(joints)}")
        if any(d not in (1, -1) for d in v["directions"]):
            raise BamError(f"directions must be +1 or -1, got {list(v['directions'])}")
        if any(p < 0 for p in v["slave_positions"]):
            raise BamError(f"slave_positions must be >= 0, got {list(v['slave_positions'])}")
        if str(v["mode"]).lower() not in MODES:
            raise BamError(f"mode must be one of {', '.join(MODES)}, got {v['mode']!r}")
        self._actuator = actuator_parameter(v["actuator"])
        if self._actuator.family != CURRENT:
            raise BamError(f"actuator {self._actuator.name} is voltage-controlled; the eRob "
                           "driver's bench actuator is an eRob (erob80_50, erob80_100)")
        self.joint_names = joints
        self._mode_name = str(v["mode"]).lower()
        self._configure_loop(v)
        self._kt = mean_kt(self._actuator)
        specs = [JointSpec(j, m, p or None) for j, m, p in
                 zip(joints, self._models, v["slave_positions"], strict=True)]
        bus = EthercatBus(v["interface"], specs, mode=MODES[self._mode_name],
                          watchdog=float(v["sm_watchdog"]),
                          frame_timeout=float(v["frame_timeout"]), csp_gain=float(v["gain"]))
        frames = [JointFrame(float(o), int(d), a.damping, float(a.fixed["current_limit"]))
                  for o, d, a in zip(v["offsets"], v["directions"], self._drive_actuators,
                                     strict=True)]
        now = time.monotonic()
        self._supervisor = ErobSupervisor(
            bus, frames, gain=float(v["gain"]), enabled=bool(v["torque_enable_on_start"]),
            command_timeout=float(v["command_timeout"]), log=self._log, now=now,
            connect_timeout=float(v["connect_timeout"]))
        self._diag_previous = (now, (Counters(), self._supervisor.link.stats.copy(), [0] * n))

    def _describe(self) -> str:
        bus = self._supervisor.bus
        return (f"{len(self.joint_names)} eRob drive(s) on {bus.interface}: "
                + ", ".join(f"{j} ({s.model.title})" for j, s in zip(self.joint_names, bus.joints))
                + f", {self._rate:g} Hz, mode {self._mode_name}")

    # -- public helpers ------------------------------------------------------------------

    @property
    def supervisor(self) -> ErobSupervisor:
        return self._supervisor

    @property
    def connected(self) -> bool:
        return self._supervisor is not None and self._supervisor.connected

    @property
    def _location(self) -> str:
        return self._supervisor.bus.interface

    # -- publishing --------------------------------------------------------------------

    def _publish(self, stamp_ns: int, cycle: Cycle) -> float:
        topics, command = self.topics, cycle.command
        joint = topics.joint_msg
        stamp(stamp_ns, joint, topics.state_msg)
        for i, r in enumerate(cycle.readings):
            fill_joint(joint, topics.states[i], i, position=r.position, velocity=r.velocity,
                       torque=self._kt * r.current, goal=command.goals[i],
                       enabled=r.state is cia402.State.OPERATION_ENABLED,
                       gain=float(command.gains[i]), control=cycle.controls[i],
                       current=r.current, voltage=r.voltage, temperature=r.temperature,
                       error_flags=int(r.error_code))
        topics.publish_states(joint, topics.state_msg)
        return cycle.readings[0].voltage

    def _damping(self) -> float:
        """The actuator's damping: the current law of the paper uses it."""
        return float(self._actuator.damping)

    def _unit(self) -> str:
        """The drive's serial number (identity 0x1018:4), once its configuration is read."""
        drives = self._supervisor.bus.drives if self._supervisor is not None else []
        if not drives or drives[0].config is None:
            return ""
        return f"erob serial {drives[0].config.serial_number}"

    # -- diagnostics -------------------------------------------------------------------

    def _diagnostics_snapshot(self) -> tuple[Counters, dict, list[int]]:
        sup = self._supervisor
        return (Counters(**vars(sup.counters)), dict(sup.link.stats),
                [h.al_errors for h in sup.health])

    def _diagnostics(self, now: tuple, before: tuple, window: float) -> list[DiagnosticStatus]:
        """The line, then each joint."""
        (counters, link, al_errors), (counters0, link0, al_errors0) = now, before
        return [self._bus_status(counters, counters0, link, link0, window)] + [
            self._joint_status(i, al_errors[i] - al_errors0[i], window)
            for i in range(len(self.joint_names))]

    def _bus_status(self, c: Counters, c0: Counters, link: dict, link0: dict,
                    window: float) -> DiagnosticStatus:
        sup = self._supervisor
        bus = sup.bus
        lost, wkc = c.lost_frames - c0.lost_frames, c.wkc_errors - c0.wkc_errors
        cycles = c.cycles - c0.cycles
        rate = cycles / window
        errors = f"{lost} lost frames, {wkc} working counter errors in {window:.1f} s"
        if sup.link.state != "open":
            level, message = DiagnosticStatus.ERROR, f"link {sup.link.state}"
        elif lost + wkc > ERROR_SHARE * max(cycles, 1) or \
                link["port_losses"] != link0["port_losses"]:
            level, message = DiagnosticStatus.WARN, errors
        elif rate < 0.9 * self._rate:
            level, message = DiagnosticStatus.WARN, f"{rate:.0f} Hz, below {self._rate:g} Hz" \
                + (f" ({errors})" if lost or wkc else "")
        else:
            level = DiagnosticStatus.OK
            message = f"{rate:.0f} Hz, OP" + (f" ({errors})" if lost or wkc else "")
        values = {
            "interface": bus.interface, "link state": sup.link.state,
            "slaves found": len(bus.slaves), "expected working counter": bus.expected_wkc,
            "mode": self._mode_name, "rate target (Hz)": f"{self._rate:g}",
            "rate achieved (Hz)": f"{rate:.1f}",
            "good cycles (Hz)": f"{(c.good_cycles - c0.good_cycles) / window:.1f}",
            "lost frames": c.lost_frames, "working counter errors": c.wkc_errors,
            "AL recoveries": c.recoveries, "link losses (re-scans)": link["port_losses"],
            "connections": link["reconnects"], "deadline slips": self.slips,
            "watchdog": sup.describe_watchdog(),
            "rejected commands": sum(self._rejections.counts.values()),
        }
        return diagnostic_status(level, f"{self.get_name()}: EtherCAT line",
                                 f"ethercat {bus.interface}", message, values)

    def _joint_status(self, i: int, new_al_errors: int, window: float) -> DiagnosticStatus:
        sup = self._supervisor
        health = sup.health[i]
        last = sup.last.readings[i] if sup.last is not None else None
        drive = sup.bus.drives[i] if i < len(sup.bus.drives) else None
        if sup.link.state != "open":
            level, message = DiagnosticStatus.ERROR, "line not in OP"
        elif health.fault:
            level, message = DiagnosticStatus.ERROR, f"drive fault {health.fault}"
        elif new_al_errors:
            level = DiagnosticStatus.WARN
            message = f"left OP {new_al_errors}x in {window:.1f} s: {health.last_al_error}"
        else:
            level, message = DiagnosticStatus.OK, "OK"
        values = {
            "joint": self.joint_names[i], "model": self._models[i].title,
            "slave position": drive.info.position if drive else "",
            "AL state": reg.al_state_name(health.al_status) if health.al_status else "",
            "AL errors": health.al_errors, "last AL error": health.last_al_error or "none",
            "CiA 402 state": last.state.value if last and last.state else "",
            "statusword": f"0x{last.statusword:04X}" if last else "",
            "error code": f"0x{last.error_code:04X}" if last else "",
            "fault": health.fault or "none", "faults": health.faults,
            "last fault": health.last_fault or "none",
            "emergencies": health.emergencies,
            "last emergency": health.last_emergency or "none",
            "mode": cia402.MODE_NAMES.get(last.mode, str(last.mode)) if last else "",
            "temperature (C)": f"{last.temperature:g}" if last else "",
            "DC link voltage (V)": f"{last.voltage:g}" if last else "",
        }
        name = f"{self.get_name()}: {self.joint_names[i]}"
        if drive is not None:
            name += f" (slave {drive.info.position})"
        return diagnostic_status(level, name, f"erob {self._models[i].title}", message, values)


def main(args: list[str] | None = None) -> int:
    return driver_main(ErobNode, "eRob drives on EtherCAT (bam_drivers)", args)


if __name__ == "__main__":
    sys.exit(main())
