"""A Feetech STS bus: the Dynamixel bus on ``feetech-servo-sdk``'s port (``scservo_sdk``).

No ROS import. Everything but the wire is the Dynamixel bus's
(:class:`bam_drivers.serial_servo.bus.SerialServoBus`): control tables as data, SI
joint values with offsets and directions, per-servo counters, port loss and
reopening, replies checked and garbled ones read again, torque off read back. What the
SCS protocol changes:

* the cycle's read is one *sync read* (0x82, protocol-1.0 framing, 1-byte
  address and length) of the state block 56..70 (15 bytes) of every servo;
  the status packets are collected one by one as on the Dynamixel bus, so a
  servo that does not answer does not hide the others;
* the status error byte holds only the servo's alarms: bit 0 input voltage,
  1 angle sensor, 2 overheating, 3 overcurrent, 5 overload (the SDK's
  ``ERRBIT_*``); the firmware reports no instruction errors: a refused
  write is simply not applied;
* position mode is operating mode 0 (register 33); the P coefficient (21) is
  the model's kp; EEPROM writes take effect at once (with Lock set, they are
  not kept over a power cycle, which is what a driver wants).

Bytes on the wire per cycle, n servos: read tx 8 + n, rx 21n; goals tx 8 + 3n.
``feetech-servo-sdk`` accepts the baud rates of :data:`BAUD_RATES` only.
"""

from __future__ import annotations

from scservo_sdk import PortHandler

from bam_drivers.feetech.control_table import TABLES
from bam_drivers.serial_servo import packet as pk
from bam_drivers.serial_servo.bus import PortMixin, SerialServoBus, bit_names

# scservo_sdk.port_handler.PortHandler.getCFlagBaud
BAUD_RATES = (4800, 9600, 14400, 19200, 38400, 57600, 115200, 128000, 250000, 500000,
              1000000)
ERROR_BITS = {0: "input voltage", 1: "angle sensor", 2: "overheating", 3: "overcurrent",
              5: "overload"}
HARDWARE_BITS = 0b0010_1111


class _Port(PortMixin, PortHandler):
    """feetech-servo-sdk's port."""


class FeetechBus(SerialServoBus):
    """STS servos of one control table on one port (see the module docstring)."""

    KIND = "Feetech"
    SDK = "feetech-servo-sdk"
    BAUD_RATES = BAUD_RATES
    TABLES = TABLES
    TABLES_MODULE = "bam_drivers.feetech.control_table"
    PORT = _Port

    def hardware_error_names(self, bits: int) -> list[str]:
        return bit_names(ERROR_BITS, bits)

    def status_error_text(self, error: int) -> str:
        return ""  # the error byte holds alarms only, counted as hardware errors

    def _read_request(self, start: int, length: int) -> bytes:
        params = pk.sync_read_params(start, length, list(self.ids), protocol=1)
        return pk.instruction_packet(1, pk.BROADCAST_ID, pk.Instruction.SYNC_READ, params)

    def _hardware_error(self, dxl_id: int, error: int) -> int:
        return error & HARDWARE_BITS
