"""The shipped MuJoCo arms (paper section VI-B) and a one-joint pendulum model.

Three 2R arms moving in a vertical plane under gravity, MJCF files in
``bam_sim/mjcf/`` (installed to ``share/bam_sim/mjcf``); the files document
their geometry and masses. Both follow the same conventions: joints "shoulder"
and "elbow" about −y, each driven by a ``<motor>`` of the same name, q = 0 with
the links hanging down, the tip at::

    x = l1·sin q1 + l2·sin(q1 + q2)
    z = z_shoulder − l1·cos q1 − l2·cos(q1 + q2)

=========== ============== ============== ====== ====== ==========
arm         shoulder       elbow          l1/m   l2/m   z_shoulder
=========== ============== ============== ====== ====== ==========
dynamixel   MX-106 (m4)    MX-64 (m4)     0.20   0.20   0.5
erob        eRob80:100 (m6) eRob80:50 (m6) 0.45  0.40   1.2
feetech     STS3215 (m1)   STS3215 (m1)   0.12   0.14   0.3
=========== ============== ============== ====== ====== ==========

The default friction model of each joint is the richest the paper found best
on that arm (Fig. 7: M4 for the Dynamixel arm, M6 for the eRob arm); the
STS3215 has only a published M1 set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from bam_sim.bench.geometry import GRAVITY, Bench
from bam_sim.common.errors import BamError
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.parameter_set import ParameterSet
from bam_sim.mujoco_arm.servo_arm import ArmJoint, ServoArm

SOURCE_MODELS = Path(__file__).resolve().parents[2] / "mjcf"


def models_dir() -> Path:
    """Folder of the shipped MJCF files: the installed share folder, else the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory

        installed = Path(get_package_share_directory("bam_sim")) / "mjcf"
        if installed.is_dir():
            return installed
    except (ImportError, LookupError, ValueError):
        pass
    return SOURCE_MODELS


class JointSpec(NamedTuple):
    """A servo joint of a shipped arm."""

    joint: str  # MJCF hinge joint (also the ROS joint name)
    actuator_name: str  # its MJCF <motor>
    actuator: str  # bam_sim actuator, e.g. "mx106"
    model: str  # default friction model, e.g. "m4"


@dataclass(frozen=True)
class ArmSpec:
    """A shipped arm: its MJCF file, servo joints and link geometry (m)."""

    name: str
    title: str
    filename: str
    joints: tuple[JointSpec, ...]
    link_lengths: tuple[float, float]
    shoulder_height: float

    @property
    def mjcf(self) -> Path:
        return models_dir() / self.filename


ARMS: dict[str, ArmSpec] = {
    spec.name: spec
    for spec in (
        ArmSpec("dynamixel", "Dynamixel 2R arm (MX-106 shoulder, MX-64 elbow)",
                "dynamixel_2r.xml",
                (JointSpec("shoulder", "shoulder", "mx106", "m4"),
                 JointSpec("elbow", "elbow", "mx64", "m4")),
                (0.20, 0.20), 0.5),
        ArmSpec("erob", "eRob 2R arm (eRob80:100 shoulder, eRob80:50 elbow)", "erob_2r.xml",
                (JointSpec("shoulder", "shoulder", "erob80_100", "m6"),
                 JointSpec("elbow", "elbow", "erob80_50", "m6")),
                (0.45, 0.40), 1.2),
        ArmSpec("feetech", "Feetech 2R arm (STS3215 shoulder and elbow)", "feetech_2r.xml",
                (JointSpec("shoulder", "shoulder", "sts3215", "m1"),
                 JointSpec("elbow", "elbow", "sts3215", "m1")),
                (0.12, 0.14), 0.3),
    )
}


def arm_spec(name: str) -> ArmSpec:
    """A shipped arm by name (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in ARMS:
        raise BamError(f"unknown arm '{name}'; choose one of {', '.join(ARMS)} or give an "
                       "MJCF file")
    return ARMS[key]


def _param_set(joint: str, value: object) -> ParameterSet:
    if isinstance(value, ParameterSet):
        return value
    if isinstance(value, (str, os.PathLike)):
        return load(value)
    raise BamError(f"params of joint '{joint}' must be a ParameterSet or a parameter file "
                   f"path, got {type(value).__name__}")


def load_arm(name_or_mjcf: str | os.PathLike,
             params: Mapping[str, ParameterSet | str] | None = None,
             motors: Mapping[str, str] | None = None, **kw) -> ServoArm:
    """A ServoArm of a shipped arm (by name) or of an MJCF file.

    ``params`` maps joint names to a ParameterSet or a parameter-file path.
    For a shipped arm, missing joints get the published set of their actuator
    and default model, and a set must be for the joint's actuator. For an MJCF
    file, ``params`` lists the servo joints, each driven by the ``<motor>`` of
    the same name or the one ``motors`` names. ``kw`` goes to :class:`ServoArm`
    (gains, stiff_friction).
    """
    params = dict(params or {})
    key = str(name_or_mjcf).strip().lower()
    if key in ARMS:
        spec = ARMS[key]
        known = [j.joint for j in spec.joints]
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise BamError(f"the {spec.name} arm has no joint '{unknown[0]}'; its joints are "
                           f"{', '.join(known)}")
        joints = []
        for j in spec.joints:
            chosen = (_param_set(j.joint, params[j.joint]) if j.joint in params
                      else published_named(j.actuator, j.model))
            if chosen.actuator.name != j.actuator:
                raise BamError(f"joint '{j.joint}' of the {spec.name} arm is an {j.actuator}; "
                               f"the parameter set given is for {chosen.actuator.name}")
            joints.append(ArmJoint(j.joint, j.actuator_name, chosen))
        return ServoArm.from_mjcf(spec.mjcf, joints, **kw)
    path = Path(name_or_mjcf)
    if path.suffix.lower() != ".xml" and not path.is_file():
        raise BamError(f"unknown arm '{name_or_mjcf}'; choose one of {', '.join(ARMS)} or "
                       "give an MJCF file")
    if not params:
        raise BamError(f"give params for the servo joints of {path} "
                       "({joint: parameter file or ParameterSet})")
    motors = dict(motors or {})
    joints = [ArmJoint(name, motors.get(name, name), _param_set(name, value))
              for name, value in params.items()]
    return ServoArm.from_mjcf(path, joints, **kw)


def pendulum_mjcf(bench: Bench, *, timestep: float = 0.001, joint: str = "pendulum",
                  integrator: str = "Euler") -> str:
    """MJCF of the pendulum bench of :mod:`bam_sim.bench.pendulum`, one hinge driven by a motor.

    A point mass ``bench.mass`` at ``bench.length`` plus a uniform rod of mass
    ``bench.arm_mass``: one body whose explicit inertia gives about the joint
    J_load = m·l² + m_a·l²/3 and whose centre of mass gives the gravity torque
    −(m + m_a/2)·g·l·sin q (the armature J_m is added by ServoArm). q = 0
    hangs down; same friction-constraint settings as the shipped arms.
    """
    if not isinstance(bench, Bench):
        raise BamError(f"bench must be a Bench, got {type(bench).__name__}")
    total = bench.mass + bench.arm_mass
    if total <= 0.0:
        raise BamError("pendulum bench needs mass + arm_mass > 0 kg; MuJoCo cannot move a "
                       "massless body")
    if not timestep > 0.0:
        raise BamError(f"timestep must be > 0 s, got {timestep}")
    length = bench.length
    com = (bench.mass + 0.5 * bench.arm_mass) * length / total
    j_load = bench.mass * length**2 + bench.arm_mass * length**2 / 3.0
    # Inertia about the centre of mass (parallel-axis theorem); MuJoCo needs it > 0,
    # and a pure point mass has none: 1e-12 kg·m² is far below any armature.
    i_com = max(j_load - total * com**2, 1e-12)
    return f"""<mujoco model="pendulum">
  <compiler angle="radian"/>
  <option timestep="{timestep!r}" integrator="{integrator}" gravity="0 0 {-GRAVITY!r}"/>
  <worldbody>
    <body name="arm">
      <joint name="{joint}" type="hinge" axis="0 -1 0" solreffriction="{2 * timestep!r} 1"
             solimpfriction="0.9999 0.9999 0.001 0.5 2"/>
      <inertial pos="0 0 {-com!r}" mass="{total!r}"
                diaginertia="{i_com!r} {i_com!r} {min(i_com, 1e-12)!r}"/>
      <geom type="capsule" fromto="0 0 0 0 0 {-length!r}" size="0.005" mass="0"
            contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="{joint}" joint="{joint}" gear="1"/>
  </actuator>
</mujoco>
"""
