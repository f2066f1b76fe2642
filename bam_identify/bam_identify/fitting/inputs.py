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


class DataRequest(Protocol):
    """What names the data: a FitJob, or eval's parsed options."""

    bags: tuple[Path, ...] | list[Path]
    logs: tuple[Path, ...] | list[Path]
    dt: float
    actuator: str | None


def load_data(request: DataRequest) -> Dataset:
    """The bench logs of ``request``'s bags and legacy logs, every path checked first."""
    from bam_identify.data.dataset import load_dataset

    if not request.bags and not request.logs:
        raise BamError("no data: give --bags and/or --logs")
    for option_name, paths in (("--bags", request.bags), ("--logs", request.logs)):
        for path in paths:
            check_input(Path(path), option_name)
    return load_dataset(bags=request.bags, logs=request.logs, dt=request.dt,
                        actuator=request.actuator)


def check_input(path: Path, option_name: str) -> None:
    """A data path is an existing file or folder (not a device, a pipe, a socket)."""
    check_length(path, option_name)  # before the OS refuses it with ENAMETOOLONG
    if not path.exists():
        raise BamError(f"{option_name} {path} does not exist; give a bag, a log or a folder "
                       "of them")
    if not (path.is_file() or path.is_dir()):
        raise BamError(f"{option_name} {path} is not a file or folder (a device or a pipe); "
                       "give a bag, a log or a folder of them")
