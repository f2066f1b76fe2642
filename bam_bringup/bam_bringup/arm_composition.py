"""The 2R arm (launch/arm.launch.py) as the runner composes it.

sim:=true starts the MuJoCo arm node of bam_sim (servo models and M1..M6
friction per joint); sim:=false the driver of bam_drivers on the real arm:
arm:=dynamixel the Dynamixel driver on ``port``, arm:=feetech the Feetech driver
on ``port`` (its own STS3215 control table), arm:=erob the eRob driver on
the EtherCAT line at ``interface`` (drives in line order: shoulder, elbow).
Both publish the same topics (bam_sim.common.contract), so the rest of a
stack does not change. Per-joint arguments (params, models, gains, actuators,
joint_names, ids) are lists in joint order (shoulder, elbow for the shipped
arms); a single entry applies to every joint, an empty entry keeps that
joint's default, and "" keeps the node's own default.
"""

from __future__ import annotations

from dataclasses import dataclass

from bam_bringup.composition import Composition, NodeSpec, Refusal, argument, given, namespace

SHIPPED_JOINTS = ("shoulder", "elbow")  # the joints of both shipped arms, in order
# The drive models of the shipped eRob arm's joints (bam_sim.mujoco_arm.shipped_arms; a test
# keeps them equal: this module does not import MuJoCo).
EROB_DRIVES = ("erob80_100", "erob80_50")


@dataclass(frozen=True)
class ArmArgs:
    """The launch arguments of the arm, with their defaults and descriptions."""

    arm: str = argument("dynamixel", "shipped arm (dynamixel = MX-106 shoulder, MX-64 elbow; "
                        "feetech = STS3215 shoulder and elbow; erob = eRob80:100 shoulder, "
                        "eRob80:50 elbow)")
    mjcf: str = argument("", "MJCF file of another robot (\"\" = the shipped model of arm); "
                         "with it, set joint_names and actuators")
    params: tuple[str, ...] = argument((), "parameter file per joint, in joint order, e.g. "
                                       "['', out/mx64_m6.yaml] (\"\" or an empty entry = the "
                                       "published set of the joint's actuator and model)")
    models: tuple[str, ...] = argument((), "friction model per joint (m1..m6; ep_* with a "
                                       "parameter file), e.g. [m1] (\"\" = the file's, else "
                                       "the arm's default)")
    gains: tuple[float, ...] = argument((), "initial gain kp per joint of the simulated arm, "
                                        "e.g. [32.0, 16.0] (\"\" = each actuator's second "
                                        "Table I gain)")
    actuators: tuple[str, ...] = argument((), "bam_sim actuator per joint, for an mjcf robot "
                                          "(\"\" = the arm's)")
    joint_names: tuple[str, ...] = argument((), "joint names in order (\"\" = the arm's, "
                                            "[shoulder, elbow])")
    sim: bool = argument(True, "simulate the arm in MuJoCo (false = the arm's driver on the "
                         "real arm: Dynamixel, Feetech or eRob)")
    real_time_factor: float = argument(1.0, "simulation speed relative to real time (0 = as "
                                       "fast as possible)")
    viewer: bool = argument(False, "open MuJoCo's viewer (needs a display; without one a "
                            "warning only)")
    port: str = argument("/dev/ttyUSB0", "serial port of the servo bus (sim:=false "
                         "arm:=dynamixel or feetech)")
    ids: tuple[int, ...] = argument((1, 2), "servo ids per joint, in joint order "
                                    "(sim:=false arm:=dynamixel or feetech)")
    servo_model: str = argument("mx106_p1", "control table of the servos (sim:=false "
                                "arm:=dynamixel; the MX-64 and MX-106 share the protocol 1.0 "
                                "table)")
    protocol: int = argument(1, "Dynamixel protocol, 1 or 2, matching servo_model "
                             "(sim:=false arm:=dynamixel)")
    interface: str = argument("eth0", "network interface of the EtherCAT line, drives in "
                              "joint order along it (sim:=false arm:=erob)")
    namespace: str = argument("", "namespace of the arm's nodes and topics, e.g. arm1 "
                              "(\"\" = none); /clock is remapped into it")


REFUSALS = (
    Refusal(lambda a: not a.sim and a.arm not in ("dynamixel", "feetech", "erob"),
            "sim:=false drives a shipped arm's hardware: arm:=dynamixel (Dynamixel servos on "
            "port), arm:=feetech (Feetech STS3215 servos on port) or arm:=erob (eRob drives "
            "over EtherCAT on interface)"),
    Refusal(lambda a: not a.sim and bool(a.gains),
            "gains:= sets the simulated arm's initial gains; on the real arm (sim:=false) send "
            "gains on /bam/commands"),
)


def arm_nodes(a: ArmArgs) -> list[NodeSpec]:
    """The node of the arm for ``a``: the simulated arm or the arm's driver."""
    ns = namespace(a.namespace)
    if a.sim:
        return [NodeSpec("arm", "bam_sim", "arm", given(
            publish_clock=True, arm=a.arm, mjcf=a.mjcf, params_files=a.params, models=a.models,
            gains=a.gains, actuators=a.actuators, joints=a.joint_names,
            real_time_factor=a.real_time_factor, viewer=a.viewer), ns)]
    joints = a.joint_names or SHIPPED_JOINTS  # the driver's own would be joint<k>
    if a.arm == "erob":
        return [NodeSpec("erob", "bam_drivers", "erob", given(
            joint_names=joints, interface=a.interface, drive_models=EROB_DRIVES), ns)]
    if a.arm == "feetech":  # its servo model and actuator are the driver's defaults
        return [NodeSpec("feetech", "bam_drivers", "feetech", given(
            joint_names=joints, port=a.port, ids=a.ids), ns)]
    return [NodeSpec("dynamixel", "bam_drivers", "dynamixel", given(
        joint_names=joints, port=a.port, ids=a.ids, servo_model=a.servo_model,
        protocol=a.protocol), ns)]


ARM = Composition("arm", ArmArgs, arm_nodes, REFUSALS)
