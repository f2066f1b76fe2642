"""MuJoCo's ``mj_step`` called from a numba kernel: no Python between two steps.

A servo joint needs its law and friction applied before every MuJoCo step; calling
``mujoco.mj_step`` from Python for each costs a numba dispatch and the ``efc_*``
views of the constraint rows every step (about half of a robot step on the SO-101
class arm). A kernel that steps MuJoCo itself needs two things Python hides:

* the address of ``mj_step`` in the very ``libmujoco`` the bindings loaded (the same
  shared object, so the same error handlers and plugins);
* where ``mjData`` keeps ``nefc`` and the ``efc_type``, ``efc_id`` and ``efc_force``
  pointers (the constraint rows, re-allocated in the arena every step).

The offsets are read off a probe's ``mjData`` (the bindings give each field's value,
and ``mjdata.h`` orders ``ncon, ne, nf, nl, nefc`` one after the other; the struct is
read through ``/proc/self/mem``, where a read past its end fails instead of crashing),
then checked against the bindings' own views over steps the kernel takes itself. Where
any check fails (another MuJoCo layout), :func:`native_step` is None and callers keep
stepping from Python.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path
from typing import NamedTuple

import mujoco
import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

# A probe whose mjData has constraint rows (dof friction and a limit) after one step.
_PROBE = """<mujoco><worldbody><body><joint name="j" type="hinge" frictionloss="0.1"
limited="true" range="-0.01 0.01"/><geom type="capsule" size="0.02 0.1"/></body>
</worldbody></mujoco>"""
_SCAN_LIMIT = 1 << 22  # bytes of mjData read at most while looking for a field
_WINDOW = 1024  # bytes before the arrays' first pointer where nefc is looked for


class NativeStep(NamedTuple):
    """What a kernel needs to step MuJoCo: ``mj_step``'s address and mjData offsets."""

    mj_step: int
    nefc: int
    efc_type: int
    efc_id: int
    efc_force: int


@intrinsic
def _int32_at(typingctx, address):
    """The int32 at ``address``."""
    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], ir.IntType(32).as_pointer()))
    return types.int32(types.intp), codegen


def _array_pointer_at(kind):
    """An intrinsic: the ``kind*`` stored at ``address`` (a pointer field of a struct)."""
    @intrinsic
    def pointer_at(typingctx, address):
        def codegen(context, builder, signature, args):
            raw = builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()))
            return builder.inttoptr(raw, context.get_value_type(types.CPointer(kind)))
        return types.CPointer(kind)(types.intp), codegen
    return pointer_at


_int32_array_at = _array_pointer_at(types.int32)
_float64_array_at = _array_pointer_at(types.float64)


@intrinsic
def _call_step(typingctx, function, model, data):
    """``function(model, data)``, a ``void (const mjModel*, mjData*)`` at an address."""
    def codegen(context, builder, signature, args):
        void_p = ir.IntType(8).as_pointer()
        kind = ir.FunctionType(ir.VoidType(), [void_p, void_p])
        step = builder.inttoptr(args[0], kind.as_pointer())
        builder.call(step, [builder.inttoptr(args[1], void_p), builder.inttoptr(args[2], void_p)])
        return context.get_dummy_value()
    return types.void(types.intp, types.intp, types.intp), codegen


@intrinsic
def unowned(typingctx, array):
    """``array`` without its owner: the same data, shape and strides, no meminfo.

    A kernel that takes views of its arrays (a row of a table, an array handed to a
    function not inlined) increments and decrements their owner's reference count for
    each, an atomic instruction: a tenth of a robot step of the SO-101-class arm (``perf``:
    ``NRT_incref``/``NRT_decref``). Without an owner numba skips them. Only for arrays
    the caller keeps alive for the whole call (a kernel's arguments).
    """
    def codegen(context, builder, signature, args):
        kind = signature.args[0]
        source = context.make_array(kind)(context, builder, value=args[0])
        out = context.make_array(kind)(context, builder)
        populate_array(out, data=source.data, shape=source.shape, strides=source.strides,
                       itemsize=source.itemsize, meminfo=None)
        return out._getvalue()
    return array(array), codegen


@nb.njit(cache=True, nogil=True)
def constraint_rows(access, data):
    """(efc_type, efc_id, efc_force) of ``data`` (an mjData address) as arrays (nefc,)."""
    nefc = _int32_at(data + access[1])
    return (nb.carray(_int32_array_at(data + access[2]), (nefc,)),
            nb.carray(_int32_array_at(data + access[3]), (nefc,)),
            nb.carray(_float64_array_at(data + access[4]), (nefc,)))


@nb.njit(cache=True, nogil=True)
def step(access, model, data):
    """One ``mj_step`` of ``model`` and ``data`` (their addresses)."""
    _call_step(access[0], model, data)


@functools.cache
def mujoco_library() -> ctypes.CDLL | None:
    """The ``libmujoco`` the bindings loaded (None where it is not beside them)."""
    libraries = sorted(Path(mujoco.__file__).parent.glob("libmujoco.so*"))
    return ctypes.CDLL(str(libraries[0])) if libraries else None


@functools.cache
def native_step() -> NativeStep | None:
    """The addresses and offsets, checked on a probe; None where they cannot be trusted."""
    library = mujoco_library()
    if library is None:
        return None
    address = ctypes.cast(library.mj_step, ctypes.c_void_p).value
    model = mujoco.MjModel.from_xml_string(_PROBE)
    data = mujoco.MjData(model)
    data.qvel[0] = 10.0  # into the limit: a limit row beside the friction row
    mujoco.mj_step(model, data)
    try:
        found = _offsets(data)
    except (LookupError, OSError):  # not found, or /proc/self/mem not readable here
        return None
    access = NativeStep(int(address), *found)
    return access if _agrees(access, model, data) else None


def _offsets(data: mujoco.MjData) -> tuple[int, int, int, int]:
    """(nefc, efc_type, efc_id, efc_force) offsets in ``data``; LookupError if not unique."""
    base = data._address
    pointers = [data.efc_type.ctypes.data, data.efc_id.ctypes.data, data.efc_force.ctypes.data]
    with open("/proc/self/mem", "rb", buffering=0) as memory:
        anchor = _find(memory, base, np.uint64, data.qpos.ctypes.data)
        fields = [anchor + _find(memory, base + anchor, np.uint64, p) for p in pointers]
        window = np.frombuffer(_read(memory, base + anchor - _WINDOW, _WINDOW), dtype=np.int32)
    counts = np.array([data.ncon, data.ne, data.nf, data.nl, data.nefc], dtype=np.int32)
    hits = [i for i in range(window.size - counts.size + 1)
            if np.array_equal(window[i:i + counts.size], counts)]
    if len(hits) != 1:
        raise LookupError("nefc")
    nefc = anchor - _WINDOW + 4 * (hits[0] + counts.size - 1)
    return nefc, *fields


def _read(memory, address: int, size: int) -> bytes:
    """``size`` bytes at ``address`` of this process; LookupError where not mapped (read
    through /proc/self/mem: past the end of a struct is an error, never a crash)."""
    try:
        chunk = os.pread(memory.fileno(), size, address)
    except OSError:
        chunk = b""
    if len(chunk) != size:
        raise LookupError(address)
    return chunk


def _find(memory, address: int, kind: type, value: int) -> int:
    """Offset of the first aligned ``value`` of ``kind`` from ``address``."""
    page = 4096
    for start in range(0, _SCAN_LIMIT, page):
        chunk = np.frombuffer(_read(memory, address + start, page), dtype=kind)
        hit = np.flatnonzero(chunk == value)
        if hit.size:
            return start + int(hit[0]) * chunk.itemsize
    raise LookupError(value)


def _agrees(access: NativeStep, model: mujoco.MjModel, data: mujoco.MjData) -> bool:
    """The kernel's view of the rows equals the bindings' over steps it takes itself."""
    for _ in range(3):
        step(access, model._address, data._address)
        rows = constraint_rows(access, data._address)
        views = (data.efc_type, data.efc_id, data.efc_force)
        if data.nefc == 0 or not all(np.array_equal(a, b) for a, b in zip(rows, views,
                                                                          strict=True)):
            return False
    return True
