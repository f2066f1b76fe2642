"""Bit casts and the fused multiply-add as numba intrinsics, for table-driven kernels.

numba has no scalar reinterpretation of a float64's bits and no ``fma``; the
look-up tables of :mod:`bam_sim.models.elastoplastic.fast_exp` and
:mod:`bam_sim.models.elastoplastic.lambert_w` need both. ``fma`` is LLVM's
``llvm.fma.f64``: a·b + c rounded once, whatever the caller's fastmath flags (a
kernel inlined into a caller compiled without them keeps its fused operations,
and its results do not depend on it).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def float_bits(typingctx, x):  # noqa: ARG001 (numba's intrinsic signature)
    """The IEEE-754 bit pattern of a float64 as an int64 (no conversion)."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):  # noqa: ARG001
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def bits_float(typingctx, i):  # noqa: ARG001
    """The float64 whose IEEE-754 bit pattern is the int64 ``i``."""
    if i != types.int64:
        return None

    def codegen(context, builder, signature, args):  # noqa: ARG001
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def fma(typingctx, a, b, c):  # noqa: ARG001
    """a·b + c with a single rounding (float64 arguments)."""
    if not all(t == types.float64 for t in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):  # noqa: ARG001
        double = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [double],
                                              ir.FunctionType(double, [double] * 3))
        return builder.call(fn, args)

    return types.float64(types.float64, types.float64, types.float64), codegen
