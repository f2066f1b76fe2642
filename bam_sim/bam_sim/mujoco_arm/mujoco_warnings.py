"""MuJoCo's warnings during a search: counted, not printed.

A candidate of a robot fit can make MuJoCo's integration diverge (an acceleration not
finite); MuJoCo then resets the simulation, counts the warning in ``mjData.warning`` and,
the first time after each reset, prints it on stderr and appends it to ``MUJOCO_LOG.TXT``
in the working directory. A search of thousands of candidates printed one warning per
diverged candidate and left the log file wherever the fit ran. The fit needs only the
count (:attr:`bam_sim.mujoco_arm.servo_arm.ServoArm.diverged` reads it, a handler or not)
and says itself how many candidates diverged.

:func:`silenced` points MuJoCo's warning hook (``mju_user_warning``, the one its bindings'
``set_mju_user_warning`` sets) at a C function that does nothing, for the time of a block:
a C function, not a Python one, because the robot rollouts step MuJoCo on threads without
the interpreter's lock. A process-wide setting, so taken by the command that runs the
search, not by library code.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager

import numba as nb

from bam_sim.mujoco_arm.native_step import mujoco_library


@nb.cfunc(nb.types.void(nb.types.voidptr), cache=True)
def _ignore(message):  # noqa: ARG001 - MuJoCo's hook takes the message
    pass


@contextmanager
def silenced() -> Iterator[None]:
    """Inside the block MuJoCo prints and logs no warning (it still counts them)."""
    library = mujoco_library()
    if library is None:  # no library beside the bindings: warnings print as before
        yield
        return
    hook = ctypes.c_void_p.in_dll(library, "mju_user_warning")
    previous = hook.value
    hook.value = _ignore.address
    try:
        yield
    finally:
        hook.value = previous
