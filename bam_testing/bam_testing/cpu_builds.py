"""Batched rollouts on this machine's numba build and on a generic x86-64 one (issue 28).

Under ``NUMBA_CPU_NAME=generic`` numba compiles for a baseline x86-64 (SSE2, no AVX, no
FMA); that build runs in a child process, in a cache of its own, beside the host's. The
kernels are compiled without fastmath, so LLVM may neither contract a·b + c into an FMA nor
reorder a sum, whatever the target; the explicit fused multiply-adds of the elasto-plastic
kernels are ``llvm.fma`` (one rounding, in hardware or in libm's ``fma``); sin, exp and pow
are libm's, the same library in both processes.

Used by ``bam_sim/test/test_sim_rollouts_threads.py`` (threads; the generic build of the
friction lanes and the elasto-plastic lanes, in the gate) and by
``benchmarks/generic_cpu.py`` (every family, the DC-motor lanes too: each family's
kernel compiles cold for a generic CPU, about 40 s of a core apiece).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numba
import numpy as np

from bam_sim.bench.bench_log import LogBatch
from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import batch_rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.parameter_set import ParameterSet

SETS = 4
# (trajectory, mass kg, length m, kp): every model's logs, 2 s at 5 ms.
LOGS = (("steps", 1.0, 0.15, 16.0), ("lift_drop", 0.5, 0.2, 8.0),
        ("accelerated_oscillations", 1.5, 0.1, 32.0))
# ep_stribeck on the MX-64: the motor of the published M2, friction in its scales
# (stable at 5 ms: K·T + B ≥ F_SC/v_S − D and T·(K·T + 2B) < 4J on these benches).
EP_FRICTION = {"friction_base": 0.06, "friction_stribeck": 0.08, "friction_viscous": 0.02,
               "dtheta_stribeck": 0.2, "contact_stiffness": 450.0, "contact_damping": 0.6}
# The dcmotor family with all five states and every group.
DCMOTOR = {"resistance": 2.0, "motorconst": 0.5, "armature": 0.01, "inductance.L": 0.004,
           "thermal.resistance": 4.0, "thermal.capacitance": 2.0, "thermal.tempcoef": 0.0039,
           "thermal.reftemp": 20.0, "thermal.ambient": 25.0, "saturation.torque": 2.5,
           "saturation.current_rate": 2000.0, "cogging.amplitude": 0.02, "cogging.poles": 12.0,
           "cogging.phase": 0.3, "lugre.stiffness": 150.0, "lugre.damping": 1.5,
           "lugre.coulomb": 0.05, "lugre.static": 0.1, "lugre.stribeck": 0.2,
           "lugre.viscous": 0.05, "controller.ki": 5.0, "controller.kd": 0.3,
           "controller.slewmax": 4.0, "controller.Imax": 0.5, "controller.Vmax": 20.0}
# Each family's sets: one batch kernel apiece (m1 and m6 share the friction lanes).
FAMILIES = {"friction lanes": ("m1", "m6"), "elasto-plastic lanes": ("ep_stribeck",),
            "DC-motor lanes": ("lugre",)}
# The host's CPU and cache settings, not passed to the child
HOST_ONLY = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_CACHE_DIR", "NPY_DISABLE_CPU_FEATURES")


def parameter_sets() -> dict[str, ParameterSet]:
    m2 = published_named("mx64", "m2").values
    motor = {name: m2[name] for name in ("kt", "R", "armature")}
    return {"m1": published_named("mx64", "m1"), "m6": published_named("mx64", "m6"),
            "ep_stribeck": ParameterSet.from_names("mx64", "ep_stribeck", {**motor, **EP_FRICTION}),
            "lugre": ParameterSet.from_names("dcmotor", "lugre", DCMOTOR)}


def positions(models: Iterable[str] | None = None, threads: int | None = None
              ) -> dict[str, np.ndarray]:
    """q[set, log, entry] of each model (all without ``models``), each set scattered by
    seeded ±5 % (every entry), on ``threads`` of numba's threads (its setting without)."""
    before = numba.get_num_threads()
    wanted = set(models) if models is not None else None
    out = {}
    try:
        if threads is not None:
            numba.set_num_threads(threads)
        for stream, (model, params) in enumerate(parameter_sets().items()):
            if wanted is not None and model not in wanted:
                continue
            rng = np.random.default_rng([28, stream])  # a model's stream, whatever is skipped
            base = params.vector()
            population = base * rng.uniform(0.95, 1.05, (SETS, base.size))
            logs = [command_log(name, Bench(mass, length), kp, duration=2.0)
                    for name, mass, length, kp in LOGS]
            out[model] = batch_rollout(params.model, population,
                                       LogBatch.pack(logs, params.actuator))
    finally:
        numba.set_num_threads(before)
    return out


_CHILD = """
import sys
import numba
import numpy as np
assert numba.config.CPU_NAME == "generic", numba.config.CPU_NAME
from bam_testing.cpu_builds import positions
np.savez(sys.argv[1], **positions(sys.argv[2:], threads=2))
"""


def generic_positions(models: Iterable[str], timeout: float = 900.0) -> dict[str, np.ndarray]:
    """:func:`positions` of ``models`` on two threads, computed by a child process on a
    generic x86-64 build of the kernels, compiled into a fresh cache of its own."""
    with tempfile.TemporaryDirectory(prefix="bam-generic-") as tmp:
        env = {k: v for k, v in os.environ.items() if k not in HOST_ONLY}
        env.update(NUMBA_NUM_THREADS="2", NUMBA_CPU_NAME="generic",
                   NUMBA_CACHE_DIR=str(Path(tmp) / "cache"))
        out = Path(tmp) / "generic.npz"
        subprocess.run([sys.executable, "-c", _CHILD, str(out), *models], env=env, check=True,
                       timeout=timeout)
        with np.load(out) as saved:
            return {name: saved[name] for name in saved.files}
