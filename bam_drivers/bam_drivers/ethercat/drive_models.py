"""The eRob drives as data: identity, gear, encoder, rated values, process-data layout.

Like the Dynamixel control tables (:mod:`bam_drivers.dynamixel.control_table`),
everything the driver and the emulator must agree on about a drive model is
here, so neither hard-codes it: the EtherCAT identity (vendor 0x5A65726F
"Zero", product 0x00029252, the ZeroErr drive of every eRob), the gear ratio
(0x6091), encoder increments per output turn (0x608F), the motor's rated
current (0x6075) and rated torque (0x6076) in which target torque 0x6071 and
actual torque 0x6077 count per mille, the current limit (I_heat of the
paper, 0x6073) and the PDOs the driver maps (RxPDO 0x1600, TxPDO 0x1A00).
Rated values and motor torque constants are nominal: the joint-side k_t is
the mean of the published parameter sets of the actuator and the rated
current a round figure; the driver reads 0x6075/0x6076 back from the drive
and converts with the drive's own values.

Units: the host's current law gives the motor current I (A); the drive's
torque is k_t,motor·I, so the target torque is 1000·k_t,motor·I / T_rated.
Positions and velocities count encoder increments of the output shaft.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bam_drivers.ethercat import cia402
from bam_drivers.ethercat.coe import DataType

VENDOR_ZEROERR = 0x5A65726F
PRODUCT_EROB = 0x00029252
DEVICE_NAME = "ZeroErr Driver"

# Manufacturer-specific objects of the emulated drive (0x2000-0x5FFF area).
DESCRIPTION = 0x2000  # VISIBLE_STRING, read-only
USER_LABEL = 0x2001  # VISIBLE_STRING, read-write
POSITION_GAIN = 0x2002  # UNSIGNED32, kp of the drive's own CSP current law, 0.001 A/rad
TEMPERATURE = 0x2010  # INTEGER16, drive temperature, 0.1 °C


@dataclass(frozen=True)
class PdoObject:
    """An object mapped in a PDO."""

    index: int
    subindex: int
    data_type: DataType
    name: str

    @property
    def bits(self) -> int:
        return {DataType.INTEGER8: 8, DataType.UNSIGNED8: 8, DataType.INTEGER16: 16,
                DataType.UNSIGNED16: 16, DataType.INTEGER32: 32,
                DataType.UNSIGNED32: 32}[self.data_type]

    @property
    def mapping(self) -> int:
        """The 32-bit entry of a PDO mapping object: index, subindex, bit length."""
        return self.index << 16 | self.subindex << 8 | self.bits


# What the driver writes every cycle and reads back, in PDO order.
RXPDO = 0x1600
TXPDO = 0x1A00
RX_ENTRIES = (
    PdoObject(cia402.CONTROLWORD, 0, DataType.UNSIGNED16, "controlword"),
    PdoObject(cia402.TARGET_TORQUE, 0, DataType.INTEGER16, "target_torque"),
    PdoObject(cia402.TARGET_POSITION, 0, DataType.INTEGER32, "target_position"),
    PdoObject(cia402.MODES_OF_OPERATION, 0, DataType.INTEGER8, "mode"),
)
TX_ENTRIES = (
    PdoObject(cia402.STATUSWORD, 0, DataType.UNSIGNED16, "statusword"),
    PdoObject(cia402.POSITION_ACTUAL, 0, DataType.INTEGER32, "position"),
    PdoObject(cia402.VELOCITY_ACTUAL, 0, DataType.INTEGER32, "velocity"),
    PdoObject(cia402.TORQUE_ACTUAL, 0, DataType.INTEGER16, "torque"),
    PdoObject(cia402.CURRENT_ACTUAL, 0, DataType.INTEGER16, "current"),
    PdoObject(cia402.ERROR_CODE, 0, DataType.UNSIGNED16, "error_code"),
    PdoObject(cia402.MODES_DISPLAY, 0, DataType.INTEGER8, "mode_display"),
    PdoObject(cia402.DC_LINK_VOLTAGE, 0, DataType.UNSIGNED32, "dc_link_voltage"),
    PdoObject(TEMPERATURE, 0, DataType.INTEGER16, "temperature"),
)

_STRUCT_CODES = {DataType.INTEGER8: "b", DataType.UNSIGNED8: "B", DataType.INTEGER16: "h",
                 DataType.UNSIGNED16: "H", DataType.INTEGER32: "i", DataType.UNSIGNED32: "I"}


def struct_format(entries: tuple[PdoObject, ...]) -> str:
    """The struct format of a PDO (little endian, packed)."""
    return "<" + "".join(_STRUCT_CODES[e.data_type] for e in entries)


@dataclass(frozen=True)
class DriveModel:
    """One eRob model: what its drive reports and how its units convert to SI."""

    name: str  # bam_sim actuator name
    title: str
    gear_ratio: int  # motor turns per output turn (0x6091)
    counts_per_turn: int  # encoder increments per output turn (0x608F)
    joint_kt: float  # N·m/A at the output, nominal (mean of the published sets)
    rated_current: float  # A (0x6075)
    max_current: float  # A, I_heat (0x6073 in per mille of the rated current)
    supply_voltage: float  # V, nominal DC link
    vendor: int = VENDOR_ZEROERR
    product: int = PRODUCT_EROB
    revision: int = 1

    @property
    def motor_kt(self) -> float:
        """N·m/A at the motor shaft."""
        return self.joint_kt / self.gear_ratio

    @property
    def rated_torque(self) -> float:
        """N·m at the motor shaft (0x6076 in mN·m)."""
        return self.motor_kt * self.rated_current

    @property
    def rated_current_ma(self) -> int:
        return round(self.rated_current * 1000.0)

    @property
    def rated_torque_mnm(self) -> int:
        return round(self.rated_torque * 1000.0)

    @property
    def max_current_permille(self) -> int:
        return round(1000.0 * self.max_current / self.rated_current)

    # -- unit conversions -------------------------------------------------------------

    def counts(self, position: float) -> int:
        """Encoder increments of an output position (rad), rounded."""
        return round(position * self.counts_per_turn / (2.0 * math.pi))

    def position(self, counts: int) -> float:
        return counts * 2.0 * math.pi / self.counts_per_turn

    def velocity(self, counts_per_second: int) -> float:
        return counts_per_second * 2.0 * math.pi / self.counts_per_turn


def torque_permille(current: float, motor_kt: float, rated_torque_mnm: int) -> int:
    """Target torque 0x6071 (per mille of the rated torque) for a motor current (A)."""
    value = round(1000.0 * motor_kt * current / (rated_torque_mnm / 1000.0))
    return max(-32768, min(32767, value))


def current_from_permille(permille: int, rated_current_ma: int) -> float:
    """Current (A) of a per-mille current value (0x6078) of the rated current."""
    return permille * rated_current_ma / 1.0e6


DRIVE_MODELS: dict[str, DriveModel] = {
    m.name: m for m in (
        DriveModel("erob80_50", "eRob80:50", gear_ratio=50, counts_per_turn=1 << 19,
                   joint_kt=4.7406, rated_current=6.0, max_current=12.0, supply_voltage=48.0),
        DriveModel("erob80_100", "eRob80:100", gear_ratio=100, counts_per_turn=1 << 19,
                   joint_kt=8.7998, rated_current=6.0, max_current=12.0, supply_voltage=48.0),
    )
}


def get_drive_model(name: str) -> DriveModel:
    key = str(name).strip().lower()
    if key not in DRIVE_MODELS:
        from bam_sim.common.errors import BamError

        raise BamError(f"unknown eRob drive model '{name}'; "
                       f"choose one of {', '.join(DRIVE_MODELS)}")
    return DRIVE_MODELS[key]
