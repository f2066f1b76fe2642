"""The drivers' tests fork their emulators from a warm process (bam_testing.module_forks).

The hooks act on the whole pytest process: the emulators that other packages' tests start
in the same run are forked too.
"""

from __future__ import annotations

from bam_drivers.emulators.emulator_process import EmulatorChild
from bam_testing import module_forks

EMULATORS = ("bam_drivers.emulators.serial_servo_emulator",
             "bam_drivers.emulators.ethercat_emulator")


def pytest_configure(config) -> None:
    EmulatorChild.launch = staticmethod(module_forks.launcher(EMULATORS))


def pytest_unconfigure(config) -> None:
    module_forks.close()
