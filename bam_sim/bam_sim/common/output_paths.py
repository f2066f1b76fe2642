"""The one layer every command's outputs go through: checked before the work, written
without losing anything.

:func:`check_output` runs before the work that fills an output (a fit never runs
for minutes and then loses everything to an unwritable ``--output``): the name
fits the file system, the folder is writable, an existing file is replaced only
with ``--force``, and an input of the same command is never an output, ``--force``
or not. :func:`write_new`, :func:`output_file` and :func:`output_folder` then write
through a temporary file or folder beside the target and move it into place
without replacing anything that appeared meanwhile (another command writing the
same new file): that command's result is kept and this one reports the collision.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from bam_sim.common.errors import BamError

NAME_MAX = 255  # bytes of one path component (Linux file systems)
PATH_MAX = 4096  # bytes of a whole path, its terminating NUL included


def check_output(path: str | os.PathLike, what: str, *, force: bool | None = False,
                 inputs: Iterable[tuple[str, str | os.PathLike]] = (),
                 folder: bool = False, suffixes: Iterable[str] = ()) -> Path:
    """``path`` may be written by this command; else a one-line BamError naming ``what``.

    ``force``: None for a command that never replaces anything (it has no --force).
    ``inputs``: (option, path) pairs the command reads, never written over.
    ``folder``: the output is a folder (a report), which may exist if empty.
    ``suffixes``: the file types the writer supports (".png", ...), if it has a list.
    """
    path = Path(path).expanduser()
    check_length(path, what)
    try:
        return _check_output(path, what, force, inputs, folder, tuple(suffixes))
    except OSError as exc:  # a folder on the way that cannot be read (EACCES), a loop
        raise BamError(f"cannot write {what} {path}: {exc.strerror or exc}; choose another "
                       "path") from None


def _check_output(path: Path, what: str, force: bool | None,
                  inputs: Iterable[tuple[str, str | os.PathLike]], folder: bool,
                  allowed: tuple[str, ...]) -> Path:
    for option, source in inputs:
        if same_file(path, source):
            raise BamError(f"{what} {path} is the input {option} {source} of this command; "
                           "write the output to another path")
    if allowed and path.suffix.lower() not in allowed:
        raise BamError(f"{what} {path}: unsupported file type '{path.suffix}'; "
                       f"give a name ending in {', '.join(allowed)}")
    if force is None and (path.exists() or path.is_symlink()):
        raise BamError(f"{what} {path} already exists; choose another path")
    if folder:
        _check_folder(path, what, bool(force))
    elif path.is_dir():
        raise BamError(f"{what} {path} is a folder; give a file name")
    elif (path.exists() or path.is_symlink()) and not force:
        raise BamError(f"{what} {path} already exists; choose another path or pass --force")
    return check_writable(path, what)


def _check_folder(path: Path, what: str, force: bool) -> None:
    if path.exists() and not path.is_dir():
        raise BamError(f"{what} {path} is a file, not a folder; give a folder")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise BamError(f"{what} {path} is a folder that is not empty; choose another one "
                       "or pass --force")


def check_length(path: Path, what: str) -> None:
    """Each name within NAME_MAX bytes and the whole within PATH_MAX, said in one line
    (the OS would refuse it later with ENAMETOOLONG, after the work)."""
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            raise BamError(f"{what}: the name '{part[:40]}...' is {size} bytes long, more "
                           f"than the {NAME_MAX} a file name may have; choose a shorter one")
    size = len(os.fsencode(os.path.abspath(path)))
    if size >= PATH_MAX:
        raise BamError(f"{what}: the path is {size} bytes long, more than the {PATH_MAX - 1} "
                       "a path may have; choose a shorter one")


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path, or the same inode
    (a hard link, a bind mount)."""
    a, b = Path(a).expanduser(), Path(b).expanduser()
    with contextlib.suppress(OSError):
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    return False


def check_writable(path: str | os.PathLike, what: str) -> Path:
    """``path`` can be created or replaced: its nearest existing folder is writable.

    Leaves nothing behind; a BamError of one line names ``what`` (e.g.
    "--report") and the folder at fault otherwise. Writability is tried, not
    inferred from permissions: root passes every permission check, yet cannot
    write to /proc or a read-only mount.
    """
    path = Path(path).expanduser()
    check_length(path, what)
    folder = path if path.is_dir() else path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise BamError(f"cannot write {what} {path}: {folder} is a file, not a folder; "
                       "choose another path")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise BamError(f"cannot write {what} {path}: {folder} is not writable "
                       f"({exc.strerror}); choose another path") from None
    return path


def write_new(path: str | os.PathLike, text: str | bytes, what: str,
              force: bool = False) -> Path:
    """Write ``text`` to ``path`` through a temporary file (:func:`output_file`)."""
    with output_file(path, what, force) as tmp:
        tmp.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return Path(path)


@contextlib.contextmanager
def output_file(path: str | os.PathLike, what: str, force: bool = False) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, so writers that infer the format
    from it still do) that becomes ``path`` when the block ends without error.

    Without ``force`` it is moved with no-replace semantics: a file that appeared
    meanwhile is kept and a one-line BamError says so. Nothing is left behind on error.
    """
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:200]}.",
                                suffix=f".tmp{path.suffix}")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        publish(tmp, path, what, force)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def output_folder(path: str | os.PathLike, what: str, force: bool = False) -> Iterator[Path]:
    """:func:`output_file` for a folder: filled beside ``path``, then moved into place.

    With ``force`` and an existing folder, the block writes into it directly (the
    user asked to overwrite; its other files are kept).
    """
    path = Path(path).expanduser()
    if force and path.is_dir():
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name[:200]}.", suffix=".tmp"))
    try:
        yield tmp
        publish(tmp, path, what, force)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish(tmp: Path, path: Path, what: str, force: bool = False) -> None:
    """Move the finished ``tmp`` to ``path``; without ``force``, never over anything.

    A file is hard-linked (``link`` fails if the target exists, atomically) and
    the temporary name removed. A folder claims ``path`` with ``mkdir`` (atomic
    too) and ``rename`` then replaces the empty claim (or an empty folder already
    there); ``rename`` refuses a folder another writer has filled meanwhile.
    """
    try:
        if tmp.is_dir():
            with contextlib.suppress(FileExistsError):
                os.mkdir(path)
            os.rename(tmp, path)
        elif force:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
            tmp.unlink()
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise BamError(f"{what} {path} was created by another command while this one "
                           "ran; it is kept as the other wrote it and this result is not "
                           "written: choose another path") from None
        raise BamError(f"cannot write {what} {path}: {exc.strerror}; choose another "
                       "path") from None
