"""``feetech``: Feetech STS servos on a serial bus, publishing what the sim node publishes.

Example (an SO-101 arm's bus adapter shows up as a USB modem)::

    ros2 run bam_drivers feetech --ros-args -p port:=/dev/ttyACM0 \\
        -p ids:=[1] -p actuator:=sts3215 -p rate:=200.0

The Dynamixel driver node (:class:`bam_drivers.nodes.serial_servo_node.SerialServoNode`:
supervisor, watchdog, reconnection, torque off read back, ``/diagnostics``)
bound to the Feetech bus (:class:`bam_drivers.feetech.bus.FeetechBus`, over
``feetech-servo-sdk``): the same parameters but ``protocol`` (the SCS
protocol has one version), the same topics. The gain is the P coefficient
register, which is the model kp of bam_sim's STS law; ``actuator`` picks
the bench's published set (``sts3215`` at 7.4 V, ``sts3215_12v``), and the
input voltage the servos measure at connection must be that set's supply
(one model number for both: a 12 V set on a 7.4 V bus is refused).
"""

from __future__ import annotations

import sys
from dataclasses import replace

from bam_drivers.feetech.bus import FeetechBus
from bam_drivers.feetech.control_table import TABLES
from bam_drivers.nodes.driver_node import driver_main
from bam_drivers.nodes.serial_servo_node import PARAMETERS as DYNAMIXEL_PARAMETERS
from bam_drivers.nodes.serial_servo_node import SerialServoNode
from bam_sim.common.node_parameters import Param
from bam_sim.models.servo.actuators import driven_by

NODE_NAME = "feetech"

_CHANGED = {
    "port": dict(default="/dev/ttyACM0"),
    "baud_rate": dict(high=1000000),
    "servo_model": dict(description=f"control table: {', '.join(TABLES)} (default: the "
                        "actuator's, its file's hardware.control_table)"),
    "gain": dict(description="initial P coefficient kp (the register is the model's kp; "
                 "default the actuator's second gain); change it with /bam/commands"),
    "actuator": dict(default="sts3215", description="bam_sim actuator of the bench "
                     f"({', '.join(driven_by('feetech'))})"),
    "latency_timer_ms": dict(description="latency timer of the serial adapter, ms, for the "
                             "packet timeout (0 = detect: 1 for a pseudo-terminal, the USB "
                             "adapter's sysfs latency_timer, else the SDK's 16)"),
}
PARAMETERS: tuple[Param, ...] = tuple(
    replace(p, **_CHANGED.get(p.name, {})) for p in DYNAMIXEL_PARAMETERS if p.name != "protocol")


class FeetechNode(SerialServoNode):
    """The Dynamixel driver node on the Feetech bus."""

    NAME = NODE_NAME
    PARAMETERS = PARAMETERS
    BUS = FeetechBus
    DRIVER = "feetech"
    ACTUATORS = driven_by(DRIVER)
    SUPPLY_VARIANTS = ACTUATORS  # one model number: told apart by the voltage measured


def main(args: list[str] | None = None) -> int:
    return driver_main(FeetechNode, "Feetech STS servos on a serial bus (bam_drivers)", args)


if __name__ == "__main__":
    sys.exit(main())
