"""What a fit is asked to do, typed: :class:`FitJob`, and how its files are named.

The command line parses into a FitJob (``fit``, ``campaign add``), the bench
session and the campaign workers build one in code; :func:`~bam_identify.fitting.plan.plan_fit`
turns it into a checked plan.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from pathlib import Path

from bam_sim.common.errors import BamError
from bam_sim.common.numbers import checked
from bam_sim.models.dcmotor.groups import DEFAULT_TEMPERATURE_WEIGHT

DEFAULT_OUTPUT = "out/fit/{actuator}_{model}.yaml"
MIN_DT = 1.0e-4  # s: the finest resampling step; 10 kHz is beyond any bench

# The range of every numeric option of fit and eval, by FitJob field: the options' argparse
# types and FitJob's own check of a job built in code (a bench session, a campaign's
# stored job) use the same spec, so both refuse the same values with the same words.
NUMBERS: dict[str, dict] = {
    "dt": {"low": MIN_DT, "high": 1.0, "high_open": True},  # a finer step: memory
    "trials": {"low": 1, "high": 10**8, "whole": True},
    "seed": {"low": 0, "high": 2**32 - 1, "whole": True},  # numpy's seed range
    "jobs": {"low": 1, "high": 4096, "whole": True},
    "popsize": {"low": 2, "high": 100_000, "whole": True},  # CMA-ES samples two at least
    "target_mae": {"low": 0.0, "high": 10.0, "low_open": True},  # rad: 0 is never reached
    "validation_fraction": {"low": 0.0, "high": 1.0, "high_open": True},
    "validation_kp": {"low": 0.0, "high": 1.0e4, "low_open": True},
    "workers": {"low": 1, "high": 1000, "whole": True},
    "temperature_weight": {"low": 0.0, "high": 1.0e3},  # rad/K
    # %: the rise of the training error that bounds each parameter's interval
    "sensitivity": {"low": 0.0, "high": 100.0, "low_open": True},
    "unit_spread": {"low": 0.001, "high": 2.0},  # the first round's σ (log scale)
}


@dataclass(frozen=True)
class FitJob:
    """What ``fit`` does, typed: the command line parses into it, the bench runner builds it.

    Field names are those of the command-line options (``--target-mae`` is
    ``target_mae``).
    """

    bags: tuple[Path, ...] = ()
    logs: tuple[Path, ...] = ()
    actuator: str | None = None
    actuator_files: tuple[Path, ...] = ()  # servos declared in files (declared on planning)
    dt: float = 0.005
    models: tuple[str, ...] = ("m1", "m4", "m6")
    trials: int = 4000
    seed: int = 0
    jobs: int | None = None
    popsize: int | None = None
    target_mae: float | None = None
    set: tuple[str, ...] = ()
    no_offset: bool = False
    no_warm_start: bool = False
    free_load_terms: bool = False
    select: bool = False
    no_polish: bool = False
    validation_fraction: float = 0.25
    validation_kp: float | None = None
    storage: str | None = None
    study: str | None = None
    workers: int | None = None
    output: str = DEFAULT_OUTPUT
    report: Path = Path("out/fit/report")
    force: bool = False
    quiet: bool = False
    groups: tuple[str, ...] = ()
    temperature_weight: float = DEFAULT_TEMPERATURE_WEIGHT
    sensitivity: float = 5.0  # % (bam_identify.fitting.sensitivity.DEFAULT_PERCENT)
    units: bool = False  # a population fit: each folder of logs one unit
    unit_parameters: tuple[str, ...] = ()
    unit_spread: float = 0.2

    def __post_init__(self) -> None:
        # The options' own checks, for jobs built in code as for the command line.
        for name, spec in NUMBERS.items():
            value = getattr(self, name)
            if value is not None:
                checked(value, f"--{name.replace('_', '-')}", **spec)
        names = [item.partition("=")[0].strip() for item in self.set]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise BamError(f"--set {twice[0]} is given {names.count(twice[0])} times; hold "
                           "each parameter once")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> FitJob:
        """The job of parsed ``fit`` options (lists become tuples: a job is hashable)."""
        values = {f.name: getattr(args, f.name) for f in fields(cls)}
        for name in ("bags", "logs", "actuator_files", "models", "set", "groups",
                     "unit_parameters"):
            values[name] = tuple(values[name] or ())
        values["models"] = values["models"] or cls.models
        return cls(**values)


def output_paths(template: str, actuator: str, models: list[str]) -> dict[str, Path]:
    """One output path per model; a template without {model} gets _<model> if several."""
    paths = {}
    for model in models:
        name = template.replace("{actuator}", actuator)
        if "{model}" in name:
            name = name.replace("{model}", model)
        elif len(models) > 1:
            path = Path(name)
            name = str(path.with_name(f"{path.stem}_{model}{path.suffix or '.yaml'}"))
        paths[model] = Path(name)
    return paths


def study_name(job: FitJob, actuator: str, model: str, count: int) -> str:
    """The study of ``model`` in ``job.storage``, one of ``count`` models fitted."""
    if job.study is None:
        return f"bam_{actuator}_{model}_seed{job.seed}"
    return job.study if count == 1 else f"{job.study}_{model}"
