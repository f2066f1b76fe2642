"""The recordings a fit or an evaluation reads: the paths checked, then loaded.

``fit``, ``eval`` and ``campaign add`` read their data here, so a path one of
them refuses is refused by all with the same line.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_length

if TYPE_CHECKING:
    from bam_identify.data.dataset import Dataset
    from bam_sim.common.cancellation import Cancellation


class DataRequest(Protocol):
    """What names the data: a FitJob, or eval's parsed options."""

    bags: tuple[Path, ...] | list[Path]
    logs: tuple[Path, ...] | list[Path]
    dt: float
    actuator: str | None


def load_data(request: DataRequest, cancel: Cancellation | None = None) -> Dataset:
    """The bench logs of ``request``'s bags and legacy logs, every path checked first;
    ``cancel`` is checked before each bag or log is read."""
    from bam_identify.data.dataset import load_dataset

    if not request.bags and not request.logs:
        raise BamError("no data: give --bags and/or --logs")
    for option_name, paths in (("--bags", request.bags), ("--logs", request.logs)):
        for path in paths:
            check_input(Path(path), option_name)
    return load_dataset(bags=request.bags, logs=request.logs, dt=request.dt,
                        actuator=request.actuator, cancel=cancel)


def read_paths(request: DataRequest) -> list[tuple[str, Path]]:
    """What ``request`` reads, as (option, path) pairs: each log file or folder of logs,
    each bag, and each bag of a folder of bags (whose other files are not read). An
    output is none of them and inside none of them (output_paths.check_output)."""
    from bam_identify.data.dataset import bag_paths

    paths = [("--logs", Path(p)) for p in request.logs]
    for given in map(Path, request.bags):
        try:
            found = bag_paths(given)
        except (BamError, OSError):  # refused by load_data, with why
            found = [given]
        paths += [("--bags", bag) for bag in found]
    return paths


def check_input(path: Path, option_name: str) -> None:
    """A data path is an existing file or folder (not a device, a pipe, a socket)."""
    check_length(path, option_name)  # before the OS refuses it with ENAMETOOLONG
    if not path.exists():
        raise BamError(f"{option_name} {path} does not exist; give a bag, a log or a folder "
                       "of them")
    if not (path.is_file() or path.is_dir()):
        raise BamError(f"{option_name} {path} is not a file or folder (a device or a pipe); "
                       "give a bag, a log or a folder of them")
