"""A fit, checked and resolved before any search runs: :func:`plan_fit`.

Every problem a job can hold (sharing options without a storage, an output
that exists or is an input, an unreadable recording, a ``--set`` name no model
has, a group of another family, ...) is found here, in the order the command
line has always reported them, and before anything is written. The names of
the job (actuator, models, groups) are resolved into objects once; the run
(:mod:`bam_identify.fitting.run`) only reads the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bam_identify.data.dataset import Dataset, split
from bam_identify.fitting.held import group_defaults, held_per_model
from bam_identify.fitting.inputs import load_data, read_paths
from bam_identify.fitting.job import FitJob, output_paths, study_name
from bam_identify.fitting.priors import Prior, load_priors, swing_priors
from bam_identify.fitting.provenance import fit_provenance
from bam_identify.fitting.report import identifiability_warnings
from bam_identify.fitting.space import SearchSpace, parse_assignments
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_output
from bam_sim.models.model_registry import FRICTION_MODELS, FrictionModel, get_model
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import declare_files


@dataclass(frozen=True)
class ModelPlan:
    """One model's share of the fit: what it searches, where it is written, its study."""

    model: FrictionModel
    space: SearchSpace
    output: Path
    held: dict[str, float]  # the --set values this model has (its provenance's "fixed")
    study: str
    prior: Prior = Prior()  # what the training logs cannot fix, held (priors.py)

    @property
    def name(self) -> str:
        return self.model.name


@dataclass(frozen=True)
class FitPlan:
    """A checked fit: the job, its data split, and one :class:`ModelPlan` per model,
    simpler models first (each richer one can start from a nested simpler fit)."""

    job: FitJob
    actuator: Actuator
    models: tuple[ModelPlan, ...]
    train: Dataset
    validation: Dataset
    warnings: tuple[str, ...]  # what the training data cannot tell apart
    provenance: dict
    selected: Path | None = None  # where --select writes the model it recommends


def plan_fit(job: FitJob, cancel: Cancellation | None = None) -> FitPlan:
    """The plan of ``job``; a one-line BamError for the first problem found. ``cancel``
    is checked as the data is read."""
    declare_files(job.actuator_files)  # again where a campaign's worker runs the job
    _check_sharing(job)
    models = resolve_models(job.models)
    names = [m.name for m in models]
    # Before loading the data; a name the actuator completes is only a stand-in, claimed
    # once the data names the actuator (another fit may write the same stand-in).
    _check_outputs(job, job.actuator or "actuator", names,
                   own=job.actuator is not None or "{actuator}" not in job.output)
    fixed = parse_assignments(job.set)
    dataset = load_data(job, cancel)
    actuator = dataset.actuator
    outputs = _check_outputs(job, actuator.name, [*names, *(["selected"] if job.select else [])])
    held = held_per_model(fixed, actuator, models, job.groups)
    train, validation = split(dataset, job.validation_fraction, job.seed, job.validation_kp)
    if job.select and not validation.logs:
        raise BamError("--select chooses on the validation logs, and there are none: give "
                       "--validation-fraction above 0 or --validation-kp")
    defaults = group_defaults(job.groups, train.logs)
    priors = {model.name: (load_priors(train.logs, model, job.free_load_terms)
                           + swing_priors(train.logs, actuator, model)).without(held[model.name])
              for model in models}
    plans = tuple(ModelPlan(model, SearchSpace.build(
        actuator, model, {**defaults, **priors[model.name].values, **held[model.name]},
        not job.no_offset, job.groups),
        outputs[model.name], held[model.name],
        study_name(job, actuator.name, model.name, len(models)), priors[model.name])
        for model in models)
    return FitPlan(job, actuator, plans, train, validation,
                   tuple(identifiability_warnings(train.logs, names, job.groups, actuator,
                                                  job.free_load_terms, frozenset(fixed))),
                   fit_provenance(job, dataset, train, validation), outputs.get("selected"))


def resolve_models(names: Sequence[str]) -> list[FrictionModel]:
    """The models a job names, each once, simpler first (the registry's order); an
    unknown name is a one-line BamError naming the valid choices."""
    models = {model.name: model for model in map(get_model, names)}
    return sorted(models.values(), key=lambda m: list(FRICTION_MODELS).index(m.name))


def _check_sharing(job: FitJob) -> None:
    """A study to share or resume is named in a storage: --study/--workers need one."""
    if (job.study is not None or job.workers is not None) and job.storage is None:
        raise BamError("--study and --workers name a study in a storage: give --storage too "
                       "(e.g. sqlite:///fit.db or postgresql+psycopg://user@host/db)")
    if job.study is not None and not job.study.strip():
        raise BamError("--study must not be empty")


def _check_outputs(job: FitJob, actuator: str, models: list[str],
                   own: bool = True) -> dict[str, Path]:
    """The parameter file of each model and the report folder, checked and, if ``own``,
    claimed for this fit (output_paths)."""
    inputs = read_paths(job)
    outputs = output_paths(job.output, actuator, models)
    for path in outputs.values():
        check_output(path, "--output", force=job.force,
                     inputs=[*inputs, ("--report", job.report)], own=own)
    check_output(job.report, "--report", force=job.force, inputs=inputs, folder=True)
    return outputs
