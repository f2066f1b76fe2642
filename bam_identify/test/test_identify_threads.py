"""A fit does not depend on the number of numba threads.

The batched kernel gives each (parameter set, log) pair to one thread and sums each
log's errors in order, so the scores, hence CMA-ES's path and the polish, are the
same bit for bit whatever the thread count. The in-process fit (numba's default
thread count) is compared with one in a fresh interpreter holding a different
count: NUMBA_NUM_THREADS is read once per process, so only a subprocess can hold
another (a machine with one core still runs the 2-thread subprocess).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numba
import pytest

from bam_identify.data.synthetic import elastoplastic_example, paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo.actuators import get_actuator

pytestmark = pytest.mark.numerics  # CI reruns these with numpy's SIMD dispatch off

# Noisy ep_stribeck logs (the elasto-plastic branch and the feasibility scoring) and
# enough trials for CMA-ES to take many generations and the polish to run.
FIT = """
import json
from bam_identify.data.synthetic import elastoplastic_example, paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo.actuators import get_actuator
logs = paper_like_set(elastoplastic_example(get_actuator("mx64"), get_model("ep_stribeck")), 4,
                      duration=1.5, noise=1e-3, seed=2)
result = identify(SearchSpace.from_names("mx64", "ep_stribeck"), logs,
                  FitSettings(trials=400, seed=1))
print(json.dumps({"values": result.values, "train_mae": result.train_mae,
                  "polishes": result.polishes}))
"""


def fit_here() -> dict:
    logs = paper_like_set(elastoplastic_example(get_actuator("mx64"), get_model("ep_stribeck")), 4,
                          duration=1.5,
                          noise=1e-3, seed=2)
    result = identify(SearchSpace.from_names("mx64", "ep_stribeck"), logs,
                      FitSettings(trials=400, seed=1))
    # through JSON as the subprocess's (floats round-trip exactly; tuples become lists)
    return json.loads(json.dumps({"values": result.values, "train_mae": result.train_mae,
                                  "polishes": result.polishes}))


def fit_with_threads(threads: int) -> dict:
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", FIT], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_fit_is_the_same_with_one_thread_or_several():
    here = fit_here()
    threads = numba.get_num_threads()
    other = fit_with_threads(1 if threads > 1 else 2)
    assert other == here
    assert here["polishes"]  # the polish ran: its residual rollouts are compared too
