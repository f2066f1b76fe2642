"""What a rosbag2 bag folder owns, so that replacing a bag never deletes anything else.

A bag folder holds ``metadata.yaml`` and the storage files it lists
(``relative_file_paths``). Replacing a bag (``--force``, ``overwrite:=true``)
removes exactly those; a folder that also holds other files (notes, a
calibration) is refused with the names of those files, so nothing a user put
there is lost.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bam_sim.common.errors import BamError

METADATA = "metadata.yaml"


def own_files(path: Path) -> set[Path]:
    """The files of the bag at folder ``path``: its metadata and the storage files it lists."""
    try:
        info = yaml.safe_load((path / METADATA).read_text())["rosbag2_bagfile_information"]
        listed = [str(name) for name in info.get("relative_file_paths") or []]
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError):
        listed = []
    files = {path / METADATA}
    for name in listed:
        file = (path / name).resolve()
        if file.parent == path.resolve():  # never a file outside the folder
            files |= {path / file.name, path / f"{file.name}-wal", path / f"{file.name}-shm"}
    return files


def writer_files(path: Path) -> list[Path]:
    """Every file a writer of a bag at ``path`` makes (rosbags names the storage file after
    the folder): what to remove of a bag whose writing failed, and nothing else."""
    storage = [path / f"{path.name}{suffix}" for suffix in (".mcap", ".db3")]
    return [path / METADATA, *storage, *(path / f"{path.name}.db3{s}" for s in ("-wal", "-shm"))]


def check_replaceable(path: Path, overwrite: bool, allow: str) -> None:
    """Refuse to write a bag at ``path`` unless it is free, or an old bag ``overwrite`` may
    replace. ``allow`` says how to allow overwriting (e.g. "pass --force")."""
    if not path.exists() and not path.is_symlink():
        return
    if not overwrite:
        raise BamError(f"{path} already exists; choose another path or {allow}")
    if path.is_symlink() or not path.is_dir():
        raise BamError(f"{path} exists and is not a bag folder; refusing to replace it, "
                       "choose another path")
    present = set(path.iterdir())
    if present and not (path / METADATA).is_file():
        raise BamError(f"{path} exists and is not a rosbag2 bag folder (no {METADATA}); "
                       "refusing to replace it, choose another path")
    foreign = sorted(p.name for p in present - own_files(path))
    if foreign:
        raise BamError(f"{path} also holds files that are not part of its bag "
                       f"({', '.join(foreign)}); move them away or choose another path")


def remove_bag(path: Path) -> None:
    """Remove the bag at ``path`` (checked by :func:`check_replaceable`): its own files,
    then the folder."""
    for file in own_files(path):
        file.unlink(missing_ok=True)
    path.rmdir()
