"""The one share-folder lookup: a package's installed data, else its source tree.

Installed packages (``colcon build`` without ``--symlink-install``, or a
binary install) keep their data under ``share/<package>/`` in the ament index;
a source checkout keeps it beside the package's Python folder. Both are
found, so configuration files resolve the same way in every install.
"""

from __future__ import annotations

from pathlib import Path

from bam_sim.common.errors import BamError


def share_file(package: str, *parts: str, source_root: Path | None = None) -> Path:
    """``share/<package>/<parts...>`` of the installed package, else ``source_root/<parts>``.

    ``source_root`` is the package's source folder (the one holding
    ``package.xml``); a BamError names both places when neither has the file.
    """
    candidates = []
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            candidates.append(Path(get_package_share_directory(package)).joinpath(*parts))
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    if source_root is not None:
        candidates.append(Path(source_root).joinpath(*parts))
    for path in candidates:
        if path.exists():
            return path
    where = " or ".join(str(p) for p in candidates) or f"share/{package}"
    raise BamError(f"{'/'.join(parts)} of package {package} not found (looked in {where}); "
                   "build and source the workspace, or give the file's path")
