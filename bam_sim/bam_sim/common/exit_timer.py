"""Exit with a given code after a delay, even while a native call holds the GIL.

Why not ``threading.Timer``: the hang it must cut holds the GIL. Caught with
``py-spy dump --native`` and gdb on a pendulum node stopped beside another (issue 23):
the main thread, *active with the GIL*, spins in Fast DDS 2.14's
``DomainParticipant::set_listener`` (``rmw_destroy_node`` → ``destroy_participant``
when the context's last node goes), waiting for an in-flight discovery callback to
end, while that callback (``onReaderDiscovery``, a receive thread, the other node's
readers leaving at the same moment) waits for a mutex the spinning thread keeps
taking (eProsima/Fast-DDS#6513 describes the spin). rclpy holds the GIL through
``rcl_node_fini``, so no Python thread, timer or signal handler runs again.

A POSIX timer with ``SIGEV_THREAD`` needs no Python: when it expires, glibc starts a
thread that calls the notify function with the timer's value, and ``_exit(int)``
takes that value as its status. A second timer, a moment earlier, calls
``warnx(message)`` (one line on stderr, unbuffered, after the executable's name) to
say why. Where this is not
available (no ``timer_create``), :class:`ExitTimer` falls back to a Python timer,
which covers every hang that releases the GIL.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading

_SIGEV_THREAD = 2
_CLOCK_MONOTONIC = 1
_WARN_AHEAD = 0.05  # s: the line comes this much before the exit


class _SigVal(ctypes.Union):
    _fields_ = [("sival_int", ctypes.c_int), ("sival_ptr", ctypes.c_void_p)]


class _SigEvent(ctypes.Structure):  # glibc's struct sigevent, 64 bytes on 64-bit Linux
    _fields_ = [("sigev_value", _SigVal), ("sigev_signo", ctypes.c_int),
                ("sigev_notify", ctypes.c_int), ("sigev_notify_function", ctypes.c_void_p),
                ("sigev_notify_attributes", ctypes.c_void_p), ("_pad", ctypes.c_int * 8)]


class _TimeSpec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("it_interval", _TimeSpec), ("it_value", _TimeSpec)]


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux") or ctypes.sizeof(_SigEvent) != 64:
        return None
    # timer_create: libc >= 2.34, else librt. find_library only then: it runs ldconfig in a
    # child process, seconds of a stop on a loaded machine (seen in the stop stress).
    for name in (lambda: None, lambda: ctypes.util.find_library("rt")):
        lib = ctypes.CDLL(name(), use_errno=True)
        if hasattr(lib, "timer_create") and hasattr(lib, "_exit") and hasattr(lib, "warnx"):
            return lib
    return None


class ExitTimer:
    """``os._exit(code)`` after ``seconds`` unless cancelled; ``message`` on stderr first."""

    def __init__(self, seconds: float, code: int, message: str) -> None:
        self._libc = _libc()
        self._timers: list[ctypes.c_void_p] = []
        self._fallback: threading.Timer | None = None
        self._message = ctypes.create_string_buffer(message.replace("%", "%%").encode())
        self._program = ctypes.create_string_buffer(os.path.basename(sys.argv[0]).encode())
        if self._libc is None or not self._arm_native(seconds, code):
            self._fallback = threading.Timer(seconds, self._exit_now, (code, message))
            self._fallback.daemon = True
            self._fallback.start()

    def cancel(self) -> None:
        for timer in self._timers:
            self._libc.timer_delete(timer)
        self._timers.clear()
        if self._fallback is not None:
            self._fallback.cancel()

    @staticmethod
    def _exit_now(code: int, message: str) -> None:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        os._exit(code)

    def _arm_native(self, seconds: float, code: int) -> bool:
        warn = ctypes.cast(self._libc.warnx, ctypes.c_void_p).value
        exit_ = ctypes.cast(self._libc._exit, ctypes.c_void_p).value
        message = ctypes.cast(self._message, ctypes.c_void_p).value
        if self._program.value:  # warnx's prefix: the executable's name, not "python"
            ctypes.c_void_p.in_dll(self._libc, "program_invocation_short_name").value = \
                ctypes.cast(self._program, ctypes.c_void_p).value
        return (self._arm(max(seconds - _WARN_AHEAD, 0.001), warn, _SigVal(sival_ptr=message))
                and self._arm(seconds, exit_, _SigVal(sival_int=code)))

    def _arm(self, seconds: float, function: int, value: _SigVal) -> bool:
        event = _SigEvent(sigev_value=value, sigev_notify=_SIGEV_THREAD,
                          sigev_notify_function=function)
        timer = ctypes.c_void_p()
        if self._libc.timer_create(_CLOCK_MONOTONIC, ctypes.byref(event),
                                   ctypes.byref(timer)) != 0:
            self.cancel()
            return False
        self._timers.append(timer)
        whole = int(seconds)
        spec = _ITimerSpec(it_value=_TimeSpec(whole, int((seconds - whole) * 1e9)))
        if self._libc.timer_settime(timer, 0, ctypes.byref(spec), None) != 0:
            self.cancel()
            return False
        return True
