"""Identification datasets: the bench logs of one actuator, from bags and legacy JSON logs.

:func:`load_dataset` reads rosbag2 bags (bag folders, single .mcap/.db3
files, or folders of bag folders) and legacy JSON logs, resampled onto one
time step, and keeps the logs of one actuator. :func:`split` holds out a
validation set: every log of one gain, or a seeded share of each trajectory.

A log is identified by its content (:func:`content_key`), not by the path it
was read from: the same recording named twice (``B B/``, a bag and its
storage file, a copied folder, an .mcap and its .db3 copy, a copied JSON log)
is kept once, with a warning, so that no validation log is a copy of a
training log; and the split does not depend on the order or the spelling of
the paths.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bam_identify.data.bag_reader import read_bag
from bam_identify.data.bag_topics import BAG_SUFFIXES
from bam_identify.data.legacy_logs import legacy_log_files, read_legacy_log
from bam_sim.bench.bench_log import BenchLog
from bam_sim.common.cancellation import Cancellation
from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import get_actuator

PathsLike = str | os.PathLike | Iterable[str | os.PathLike]
LOG = logging.getLogger(__name__)

# What a log's content is: its bench description and recording conditions, its start
# stamp where the source has one, and every recorded and commanded series.
_KEY_SCALARS = ("actuator", "trajectory")
_KEY_SERIES = ("goal", "enabled", "position", "velocity", "control", "temperature",
               "input_voltage")


def content_key(log: BenchLog) -> str:
    """A digest of what ``log`` recorded (never where it was read from): equal for the
    same recording read from any path or storage format, different for two runs."""
    digest = hashlib.sha256()
    numbers = [log.bench.mass, log.bench.length, log.bench.arm_mass, log.kp, log.dt,
               log.supply_voltage, log.damping, log.meta.get("start_time")]
    scalars = [str(log.meta.get(name)) for name in _KEY_SCALARS] + [
        None if x is None else float(x) for x in numbers] + [len(log)]
    digest.update(repr(scalars).encode())  # repr: floats exactly, None as itself
    for name in _KEY_SERIES:
        series = getattr(log, name)
        digest.update(b"none" if series is None else
                      np.ascontiguousarray(series, dtype=np.float64).tobytes())
    return digest.hexdigest()


def unique_logs(logs: list[BenchLog]) -> list[BenchLog]:
    """``logs`` without repeated recordings (the first reading of each is kept), with one
    warning line saying how many were left out and from where."""
    seen: dict[str, BenchLog] = {}
    dropped: dict[tuple[str, str], int] = {}
    for log in logs:
        key = content_key(log)
        if key in seen:
            pair = (str(log.meta.get("source", "")), str(seen[key].meta.get("source", "")))
            dropped[pair] = dropped.get(pair, 0) + 1
        else:
            seen[key] = log
    if dropped:
        where = "; ".join(f"{n} from {again} " + ("(given twice)" if again == first else
                                                  f"(already read from {first})")
                          for (again, first), n in dropped.items())
        LOG.warning(f"warning: {sum(dropped.values())} duplicate log(s) left out, the same "
                    f"recordings given more than once: {where}")
    return list(seen.values())


def _sources_of(logs: list[BenchLog]) -> list[str]:
    return list(dict.fromkeys(str(log.meta.get("source", "")) for log in logs))


@dataclass
class Dataset:
    """Bench logs of one actuator, with the bags and files they come from."""

    actuator: Actuator  # resolved once, from the name the logs carry, by load_dataset
    logs: list[BenchLog] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.logs)

    def __iter__(self):
        return iter(self.logs)

    @property
    def trajectories(self) -> list[str]:
        """Trajectory names present, sorted."""
        return sorted({str(log.meta.get("trajectory", "")) for log in self.logs})

    @property
    def gains(self) -> list[float]:
        """Gains kp present, sorted."""
        return sorted({float(log.kp) for log in self.logs})

    @property
    def masses(self) -> list[float]:
        """Point masses (kg) present, sorted."""
        return sorted({float(log.bench.mass) for log in self.logs})

    @property
    def lengths(self) -> list[float]:
        """Arm lengths (m) present, sorted."""
        return sorted({float(log.bench.length) for log in self.logs})

    @property
    def benches(self) -> list:
        """Distinct benches, in order of first appearance."""
        return list(dict.fromkeys(log.bench for log in self.logs))

    @property
    def steps(self) -> int:
        """Total number of simulated steps over all logs."""
        return sum(len(log) - 1 for log in self.logs)

    def subset(self, logs: list[BenchLog]) -> Dataset:
        """A dataset of the same actuator holding ``logs``."""
        return Dataset(self.actuator, list(logs), _sources_of(logs))

    def summary(self) -> str:
        """One line: counts, trajectories, gains, masses, lengths."""
        def fmt(values: list[float]) -> str:
            return ", ".join(f"{v:g}" for v in values)
        return (f"{self.actuator.name}: {len(self)} logs from {len(self.sources)} sources; "
                f"trajectories {', '.join(self.trajectories)}; kp {fmt(self.gains)}; "
                f"mass {fmt(self.masses)} kg; length {fmt(self.lengths)} m")


def _as_paths(paths: PathsLike) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _is_bag(path: Path) -> bool:
    return (path.is_dir() and (path / "metadata.yaml").is_file()) or (
        path.is_file() and path.suffix in BAG_SUFFIXES)


def bag_paths(paths: PathsLike) -> list[Path]:
    """The bags named by ``paths``: bag folders, .mcap/.db3 files, or folders holding bags
    one level down (sorted)."""
    found: list[Path] = []
    for path in _as_paths(paths):
        if not path.exists():
            raise BamError(f"bag {path} does not exist; give a rosbag2 folder, a .mcap/.db3 "
                           "file or a folder of bags")
        if _is_bag(path) or path.is_file():
            found.append(path)  # read_bag names what is wrong with a file that is no bag
            continue
        inside = sorted(p for p in path.iterdir() if _is_bag(p))
        if not inside:
            raise BamError(f"folder {path} holds no rosbag2 bag (folder with metadata.yaml or "
                           ".mcap/.db3 file); give a bag or a folder of bags")
        found.extend(inside)
    return found


def load_dataset(bags: PathsLike = (), logs: PathsLike = (), dt: float = 0.005,
                 actuator: str | None = None, cancel: Cancellation | None = None) -> Dataset:
    """Bench logs of one actuator from ``bags`` and legacy JSON ``logs`` on the step ``dt``.

    With logs of several actuators, ``actuator`` chooses one; without it that
    is an error listing them. ``cancel`` is checked before each bag or log is read.
    """
    cancel = cancel or Cancellation()
    items: list[BenchLog] = []
    for bag in bag_paths(bags):
        cancel.check()
        items.extend(read_bag(bag, dt))
    for path in legacy_log_files(logs) if logs else []:
        cancel.check()
        items.append(read_legacy_log(path, dt))
    items = unique_logs(items)
    if not items:
        raise BamError("no bench logs to identify from; give bags (--bags) or JSON logs (--logs)")
    present = sorted({str(log.meta["actuator"]) for log in items})
    if actuator is None:
        if len(present) > 1:
            raise BamError(f"the logs are of several actuators ({', '.join(present)}); choose "
                           "one with --actuator")
        name = present[0]
    else:
        name = str(actuator).strip().lower()
        items = [log for log in items if log.meta["actuator"] == name]
        if not items:
            raise BamError(f"no log of actuator '{actuator}' (the logs are of "
                           f"{', '.join(present)}); choose one of those with --actuator")
    return Dataset(get_actuator(name), items, _sources_of(items))


def _canonical(members: list[int], logs: list[BenchLog]) -> list[int]:
    """Indices ``members`` of ``logs`` in an order that does not depend on how the paths
    were given: by start stamp (recording order, where the source has one), then by file
    name (a JSON log's only order: the order its folder lists, wherever it is copied),
    then by content digest."""
    return sorted(members, key=lambda i: (float(logs[i].meta.get("start_time", 0.0)),
                                          Path(str(logs[i].meta.get("source", ""))).name,
                                          content_key(logs[i])))


def split(dataset: Dataset, validation_fraction: float = 0.25, seed: int = 0,
          validation_kp: float | None = None) -> tuple[Dataset, Dataset]:
    """(training, validation) sets of ``dataset``.

    With ``validation_kp``, every log of that gain is held out. Otherwise, per
    trajectory, a seeded shuffle holds out round(fraction·n) of its n logs,
    at least one when n >= 2 and the fraction is > 0, and never all of them
    (every trajectory keeps a training log). The shuffle runs over the logs
    in the order of their content (:func:`_canonical`), so the same
    recordings given in any order hold out the same logs. Logs keep their order.
    """
    logs = list(dataset.logs)
    if validation_kp is not None:
        kp = float(validation_kp)
        held = [math.isclose(log.kp, kp, rel_tol=1e-9, abs_tol=1e-12) for log in logs]
        if not any(held):
            raise BamError(f"no log has kp = {validation_kp} (gains: "
                           f"{', '.join(f'{g:g}' for g in dataset.gains)}); choose one of those "
                           "for validation")
        if all(held):
            raise BamError(f"every log has kp = {validation_kp}; nothing would be left to train "
                           "on, choose another validation gain or a validation fraction")
    else:
        fraction = float(validation_fraction)
        if not (math.isfinite(fraction) and 0.0 <= fraction < 1.0):
            raise BamError(f"validation fraction must be in [0, 1), got {validation_fraction}")
        rng = np.random.default_rng(seed)
        held = [False] * len(logs)
        groups: dict[str, list[int]] = {}
        for i, log in enumerate(logs):
            groups.setdefault(str(log.meta.get("trajectory", "")), []).append(i)
        for name in sorted(groups):
            members = _canonical(groups[name], logs)
            n = len(members)
            count = int(round(fraction * n))
            if fraction > 0.0 and n >= 2:
                count = max(count, 1)
            count = min(count, n - 1)
            for j in rng.permutation(n)[:count]:
                held[members[int(j)]] = True
    train = [log for log, h in zip(logs, held) if not h]
    validation = [log for log, h in zip(logs, held) if h]
    return dataset.subset(train), dataset.subset(validation)
