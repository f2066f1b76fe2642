"""The CiA 402 drive profile: controlword 0x6040, statusword 0x6041, the state machine, errors.

Both sides of it: :func:`transition` is what a drive does with a
controlword (the emulator), :func:`controlword_for` what a master writes to
walk a drive to a wanted state (the driver): switch on disabled → ready to
switch on → switched on → operation enabled, disable operation back to
switched on, quick stop, fault → fault reset (bit 7 rising edge) → switch
on disabled. Modes of operation 0x6060 / display 0x6061: 8 cyclic
synchronous position (CSP), 10 cyclic synchronous torque (CST). Error codes
0x603F are named by :func:`error_name` (CiA 402 / CiA 301 emergency codes).
"""

from __future__ import annotations

from enum import Enum

# Objects
CONTROLWORD = 0x6040
STATUSWORD = 0x6041
ERROR_CODE = 0x603F
ERROR_REGISTER = 0x1001
IDENTITY = 0x1018  # vendor, product, revision, serial number (CiA 301)
ABORT_CONNECTION_OPTION = 0x6007
QUICK_STOP_OPTION = 0x605A
MODES_OF_OPERATION = 0x6060
MODES_DISPLAY = 0x6061
POSITION_ACTUAL = 0x6064
VELOCITY_ACTUAL = 0x606C
TARGET_TORQUE = 0x6071
MAX_TORQUE = 0x6072
MAX_CURRENT = 0x6073
RATED_CURRENT = 0x6075
RATED_TORQUE = 0x6076
TORQUE_ACTUAL = 0x6077
CURRENT_ACTUAL = 0x6078
DC_LINK_VOLTAGE = 0x6079
TARGET_POSITION = 0x607A
ENCODER_RESOLUTION = 0x608F
GEAR_RATIO = 0x6091
SUPPORTED_MODES = 0x6502

CSP, CST = 8, 10
MODE_NAMES = {0: "none", 1: "profile position", 3: "profile velocity", 4: "profile torque",
              6: "homing", 8: "cyclic synchronous position", 9: "cyclic synchronous velocity",
              10: "cyclic synchronous torque"}

# Controlword bits and commands
CW_SWITCH_ON = 0x0001
CW_ENABLE_VOLTAGE = 0x0002
CW_QUICK_STOP = 0x0004  # 0 = quick stop
CW_ENABLE_OPERATION = 0x0008
CW_FAULT_RESET = 0x0080
DISABLE_VOLTAGE = 0x0000
QUICK_STOP = 0x0002
SHUTDOWN = 0x0006
SWITCH_ON = 0x0007
DISABLE_OPERATION = 0x0007
ENABLE_OPERATION = 0x000F
FAULT_RESET = 0x0080

# Statusword bits
SW_READY_TO_SWITCH_ON = 0x0001
SW_SWITCHED_ON = 0x0002
SW_OPERATION_ENABLED = 0x0004
SW_FAULT = 0x0008
SW_VOLTAGE_ENABLED = 0x0010
SW_QUICK_STOP = 0x0020  # 0 = quick stop active
SW_SWITCH_ON_DISABLED = 0x0040
SW_WARNING = 0x0080
SW_REMOTE = 0x0200
SW_TARGET_REACHED = 0x0400


class State(Enum):
    NOT_READY = "not ready to switch on"
    SWITCH_ON_DISABLED = "switch on disabled"
    READY = "ready to switch on"
    SWITCHED_ON = "switched on"
    OPERATION_ENABLED = "operation enabled"
    QUICK_STOP_ACTIVE = "quick stop active"
    FAULT_REACTION_ACTIVE = "fault reaction active"
    FAULT = "fault"


# (mask, value, state): the statusword patterns of CiA 402 table 30
_PATTERNS = (
    (0x4F, 0x00, State.NOT_READY),
    (0x4F, 0x40, State.SWITCH_ON_DISABLED),
    (0x6F, 0x21, State.READY),
    (0x6F, 0x23, State.SWITCHED_ON),
    (0x6F, 0x27, State.OPERATION_ENABLED),
    (0x6F, 0x07, State.QUICK_STOP_ACTIVE),
    (0x4F, 0x0F, State.FAULT_REACTION_ACTIVE),
    (0x4F, 0x08, State.FAULT),
)
_BITS = {
    State.NOT_READY: 0x00, State.SWITCH_ON_DISABLED: 0x40, State.READY: 0x21,
    State.SWITCHED_ON: 0x23, State.OPERATION_ENABLED: 0x27, State.QUICK_STOP_ACTIVE: 0x07,
    State.FAULT_REACTION_ACTIVE: 0x0F, State.FAULT: 0x08,
}


def decode(statusword: int) -> State | None:
    """The state a statusword shows (None: not a CiA 402 pattern)."""
    for mask, value, state in _PATTERNS:
        if statusword & mask == value:
            return state
    return None


def statusword(state: State, *, voltage: bool, warning: bool = False,
               target_reached: bool = False) -> int:
    """The statusword of a drive in ``state`` (remote bit set: controlled over the bus)."""
    word = _BITS[state] | SW_REMOTE
    if voltage:
        word |= SW_VOLTAGE_ENABLED
    if warning:
        word |= SW_WARNING
    if target_reached:
        word |= SW_TARGET_REACHED
    return word


def _shutdown(cw: int) -> bool:
    return cw & 0x87 == 0x06


def _switch_on(cw: int) -> bool:
    return cw & 0x87 == 0x07


def _enable_operation(cw: int) -> bool:
    return cw & 0x8F == 0x0F


def _disable_voltage(cw: int) -> bool:
    return cw & 0x82 == 0x00


def _quick_stop(cw: int) -> bool:
    return cw & 0x86 == 0x02


def transition(state: State, cw: int, previous_cw: int) -> State:
    """The state a drive in ``state`` goes to on controlword ``cw`` (CiA 402 figure 10).

    Faults (transition 13, 14) and the end of a quick stop (12) are the
    drive's own events, not the controlword's; the caller handles them.
    """
    if state is State.FAULT:
        rising = cw & CW_FAULT_RESET and not previous_cw & CW_FAULT_RESET
        return State.SWITCH_ON_DISABLED if rising else state  # 15
    if state in (State.FAULT_REACTION_ACTIVE, State.NOT_READY):
        return state
    if state is State.SWITCH_ON_DISABLED:
        return State.READY if _shutdown(cw) else state  # 2
    if state is State.READY:
        if _disable_voltage(cw) or _quick_stop(cw):
            return State.SWITCH_ON_DISABLED  # 7
        return State.SWITCHED_ON if _switch_on(cw) else state  # 3
    if state is State.SWITCHED_ON:
        if _disable_voltage(cw) or _quick_stop(cw):
            return State.SWITCH_ON_DISABLED  # 10
        if _shutdown(cw):
            return State.READY  # 6
        return State.OPERATION_ENABLED if _enable_operation(cw) else state  # 4
    if state is State.OPERATION_ENABLED:
        if _disable_voltage(cw):
            return State.SWITCH_ON_DISABLED  # 9
        if _quick_stop(cw):
            return State.QUICK_STOP_ACTIVE  # 11
        if _shutdown(cw):
            return State.READY  # 8
        return state if _enable_operation(cw) else State.SWITCHED_ON  # 5
    if state is State.QUICK_STOP_ACTIVE and _disable_voltage(cw):
        return State.SWITCH_ON_DISABLED  # 12 (by the master)
    return state


def controlword_for(state: State | None, enable: bool, reset: bool, previous_cw: int) -> int:
    """What a master writes to move a drive in ``state`` towards operation enabled
    (``enable``) or switched on (not ``enable``: torque off, power stage kept).

    A fault is reset only when ``reset`` is asked: the fault reset bit goes low one
    cycle, then high (the drive acts on its rising edge).
    """
    if state in (State.FAULT, State.FAULT_REACTION_ACTIVE):
        if reset and state is State.FAULT and not previous_cw & CW_FAULT_RESET:
            return FAULT_RESET
        return DISABLE_VOLTAGE
    if state is State.QUICK_STOP_ACTIVE:
        return DISABLE_VOLTAGE
    if not enable:  # hold where the drive is, without torque
        if state in (State.OPERATION_ENABLED, State.SWITCHED_ON):
            return DISABLE_OPERATION
        return SHUTDOWN if state is State.READY else DISABLE_VOLTAGE
    if state is State.SWITCH_ON_DISABLED:
        return SHUTDOWN
    if state is State.READY:
        return SWITCH_ON
    if state in (State.SWITCHED_ON, State.OPERATION_ENABLED):
        return ENABLE_OPERATION
    return DISABLE_VOLTAGE


# Error codes (0x603F, and EMCY codes), CiA 402 / CiA 301 table 21
ERROR_CODES = {
    0x0000: "no error",
    0x1000: "generic error",
    0x2310: "over-current (continuous over current)",
    0x2320: "over-current (short circuit / earth leakage)",
    0x3210: "over-voltage (DC link)",
    0x3220: "under-voltage (DC link)",
    0x4210: "over-temperature (device)",
    0x4310: "over-temperature (drive)",
    0x5112: "supply voltage low",
    0x6320: "parameter error",
    0x7305: "encoder fault (incremental sensor 1)",
    0x8130: "communication lost (life guard / watchdog)",
    0x8400: "velocity speed controller error",
    0x8611: "following error",
    0x8612: "reference limit",
    0xFF00: "manufacturer specific",
}
OVER_CURRENT = 0x2310
OVER_TEMPERATURE = 0x4310
FOLLOWING_ERROR = 0x8611
COMMUNICATION_LOST = 0x8130

# Error register 0x1001 bits (CiA 301): generic, current, voltage, temperature, communication
ERROR_REGISTER_BITS = {0x1: 0x01, 0x2: 0x02, 0x3: 0x04, 0x4: 0x08, 0x8: 0x10}


def error_name(code: int) -> str:
    """A name for a 0x603F / EMCY code: exact, else its CiA 301 group."""
    if code in ERROR_CODES:
        return ERROR_CODES[code]
    groups = {0x2: "current", 0x3: "voltage", 0x4: "temperature", 0x5: "device hardware",
              0x6: "device software", 0x7: "additional modules", 0x8: "monitoring",
              0x9: "external error", 0xF: "additional functions"}
    return f"{groups.get(code >> 12, 'unknown')} error"


def error_register(code: int) -> int:
    """The error register 0x1001 value that goes with an error code (0 for 0x0000)."""
    if code == 0:
        return 0
    return 0x01 | ERROR_REGISTER_BITS.get(code >> 12, 0)
