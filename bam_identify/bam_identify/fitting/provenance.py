"""Where a fitted set comes from: the version, the data, the split, the seed."""

from __future__ import annotations

import datetime
import platform
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bam_identify.data.dataset import Dataset
    from bam_identify.fitting.job import FitJob


def version() -> str:
    """The installed bam_identify's version ("unknown" when run from a bare source tree)."""
    try:
        return metadata.version("bam_identify")
    except metadata.PackageNotFoundError:
        return "unknown"


def fit_provenance(job: FitJob, dataset: Dataset, train: Dataset, validation: Dataset) -> dict:
    """The provenance every parameter file of ``job`` starts from (then per model)."""
    return {
        "source": "bam_identify fit",
        "version": version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "actuator": dataset.actuator.name,
        "seed": job.seed,
        "dt": job.dt,
        "data": [str(s) for s in dataset.sources],
        "train_logs": [log.name for log in train.logs],
        "validation_logs": [log.name for log in validation.logs] or ["none"],
        "validation": (f"kp={job.validation_kp:g}" if job.validation_kp is not None
                       else f"fraction {job.validation_fraction:g}, stratified by trajectory"),
        "python": platform.python_version(),
    }
