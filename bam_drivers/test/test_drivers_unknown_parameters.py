"""The drivers refuse a parameter they do not have, naming the closest, before the bus opens.

The port and the interface named do not exist: a driver that went on to open
them would fail with another message (no connection) instead of this one.
"""

from __future__ import annotations

import pytest
from rclpy.parameter import Parameter

from bam_drivers.nodes.erob_node import ErobNode
from bam_drivers.nodes.feetech_node import FeetechNode
from bam_drivers.nodes.serial_servo_node import SerialServoNode
from bam_sim.common.errors import BamError
from bam_testing.ros_context import private_context

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load


@pytest.mark.parametrize(("node_class", "device"), [
    (SerialServoNode, Parameter("port", value="/nonexistent/ttyUSB9")),
    (FeetechNode, Parameter("port", value="/nonexistent/ttyACM9")),
    (ErobNode, Parameter("interface", value="nonexistent9")),
])
def test_a_misspelt_parameter_is_refused_before_the_device_opens(node_class, device):
    with private_context() as ctx:
        with pytest.raises(BamError) as info:
            node_class(context=ctx, parameter_overrides=[
                device, Parameter("connect_timeout", value=0.5),
                Parameter("rat", value=100.0)])
    text = str(info.value)
    assert text.startswith("unknown parameter 'rat' for node ")
    assert "did you mean 'rate'?" in text and "\n" not in text
