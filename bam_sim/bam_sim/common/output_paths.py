"""The one layer every command's outputs go through: checked before the work, written
without losing anything.

:func:`check_output` runs before the work that fills an output (a fit never runs
for minutes and then loses everything to an unwritable ``--output``): the name
fits the file system, the folder is writable, the path is new or a regular file
(a folder for a folder output: never a device, a named pipe or a socket, which a
rename would replace), an existing file is replaced only with ``--force``, and an
output is neither an input of the same command nor inside a folder it reads,
``--force`` or not. :func:`write_new`, :func:`output_file` and
:func:`output_folder` then write through a temporary file or folder beside the
target and move it into place without replacing anything that appeared meanwhile
(another command writing the same new file): that command's result is kept and
this one reports the collision. A full disk is one line (:func:`writing`): the
temporary file is removed and the file already at the path kept.

Inside :func:`claimed_outputs` (each executable's work runs there) every output
checked or written is this command's until the block ends: another command
that checks or writes the same path meanwhile is refused at once, before its
work, so two ``--force`` runs on one output never both claim to have written it.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from bam_sim.common.errors import BamError

NAME_MAX = 255  # bytes of one path component (Linux file systems)
PATH_MAX = 4096  # bytes of a whole path, its terminating NUL included
# A write that fails for want of room: the disk (or the user's quota) is full, or the
# file would exceed the size a process may write.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
         (stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file"))


def check_output(path: str | os.PathLike, what: str, *, force: bool | None = False,
                 inputs: Iterable[tuple[str, str | os.PathLike]] = (),
                 folder: bool = False, suffixes: Iterable[str] = (),
                 own: bool = True) -> Path:
    """``path`` may be written by this command; else a one-line BamError naming ``what``.

    ``force``: None for a command that never replaces anything (it has no --force).
    ``inputs``: (option, path) pairs the command reads, never written over nor into.
    ``folder``: the output is a folder (a report), which may exist if empty.
    ``suffixes``: the file types the writer supports (".png", ...), if it has a list.
    ``own``: inside :func:`claimed_outputs` the path is then this command's
    (:func:`claim`); False for a stand-in checked early (a name still to be completed).
    """
    path = Path(path).expanduser()
    check_length(path, what)
    try:
        path = _check_output(path, what, force, inputs, folder, tuple(suffixes))
    except OSError as exc:  # a folder on the way that cannot be read (EACCES), a loop
        raise BamError(f"cannot write {what} {path}: {exc.strerror or exc}; choose another "
                       "path") from None
    if own:
        claim(path, what)
    return path


def _check_output(path: Path, what: str, force: bool | None,
                  inputs: Iterable[tuple[str, str | os.PathLike]], folder: bool,
                  allowed: tuple[str, ...]) -> Path:
    check_not_input(path, what, inputs)
    if allowed and path.suffix.lower() not in allowed:
        raise BamError(f"{what} {path}: unsupported file type '{path.suffix}'; "
                       f"give a name ending in {', '.join(allowed)}")
    check_kind(path, what, folder)
    if force is None and (path.exists() or path.is_symlink()):
        raise BamError(f"{what} {path} already exists; choose another path")
    if folder:
        if path.is_dir() and any(path.iterdir()) and not force:
            raise BamError(f"{what} {path} is a folder that is not empty; choose another one "
                           "or pass --force")
    elif (path.exists() or path.is_symlink()) and not force:
        raise BamError(f"{what} {path} already exists; choose another path or pass --force")
    return check_writable(path, what)


def check_not_input(path: Path, what: str,
                    inputs: Iterable[tuple[str, str | os.PathLike]]) -> None:
    """``path`` is none of ``inputs`` ((option, path) pairs the command reads) and inside
    none of them that is a folder: a one-line BamError naming the input otherwise."""
    for option, source in inputs:
        if same_file(path, source):
            raise BamError(f"{what} {path} is the input {option} {source} of this command; "
                           "write the output to another path")
        if inside(path, source):
            raise BamError(f"{what} {path} is inside {source}, the input {option} of this "
                           "command, which reads that folder; write the output outside it")


def check_kind(path: Path, what: str, folder: bool = False) -> None:
    """``path`` is new, or what an output may replace: a regular file (a folder for a
    folder output), through symbolic links. A device, a named pipe or a socket is
    refused whatever the options: moving a file over it would replace it (run as root,
    a --force over /dev/full replaced the system's device with a parameter file)."""
    what_it_is = kind_of(path)
    if what_it_is is None or what_it_is == ("a folder" if folder else "a file"):
        return
    if folder:
        raise BamError(f"{what} {path} is {what_it_is}, not a folder; give a folder or a "
                       "new path")
    if what_it_is == "a folder":
        raise BamError(f"{what} {path} is a folder; give a file name")
    raise BamError(f"{what} {path} is {what_it_is}, not a regular file; give the path of a "
                   "regular file or of a new one")


def kind_of(path: Path) -> str | None:
    """What ``path`` is ("a character device", "a folder", "a file", ...), through symbolic
    links (named: "a symbolic link to ..."); None when nothing is there (or a symbolic
    link to nothing, which a rename replaces without touching anything else)."""
    # Not there, or a file on the way (ENOTDIR): new, as far as this says (check_writable
    # names the file on the way).
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    kind = next((name for test, name in KINDS if test(mode)), "a node of unknown kind")
    if path.is_symlink() and kind not in ("a file", "a folder"):
        return f"a symbolic link to {kind} ({os.path.realpath(path)})"
    return kind


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


def inside(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether ``path`` lies inside the existing folder ``folder`` (resolved: through
    ``..`` and symbolic links; or one of its folders is ``folder`` by inode, a bind
    mount)."""
    path, folder = Path(path).expanduser(), Path(folder).expanduser()
    with contextlib.suppress(OSError):
        if not folder.is_dir():
            return False
        resolved = path.resolve()
        if folder.resolve() in resolved.parents:
            return True
        return any(parent.exists() and os.path.samefile(parent, folder)
                   for parent in resolved.parents)
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
        raise BamError(f"cannot write {what} {path}: {folder} is {kind_of(folder)}, not a "
                       "folder; choose another path")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        if exc.errno in DISK_FULL:
            raise BamError(disk_full(path, what, exc)) from None
        raise BamError(f"cannot write {what} {path}: {folder} is not writable "
                       f"({exc.strerror}); choose another path") from None
    return path


# --- one command's outputs are its own until it ends ---------------------------------

_claims: contextvars.ContextVar[dict[str, socket.socket] | None] = contextvars.ContextVar(
    "bam_output_claims", default=None)


@contextlib.contextmanager
def claimed_outputs() -> Iterator[None]:
    """Every output :func:`check_output` or a writer of this module meets inside the block
    is claimed (:func:`claim`) until the block ends, or the process does."""
    held: dict[str, socket.socket] = {}
    token = _claims.set(held)
    try:
        yield
    finally:
        _claims.reset(token)
        for sock in held.values():
            sock.close()


@contextlib.contextmanager
def shared_outputs() -> Iterator[None]:
    """Inside the block nothing is claimed: for outputs several commands write on purpose
    (every worker of one shared fit writes the study's same parameter file and report)."""
    token = _claims.set(None)
    try:
        yield
    finally:
        _claims.reset(token)


def claim(path: Path, what: str) -> None:
    """Make ``path`` this command's, inside :func:`claimed_outputs` (nothing outside).

    Another block that claimed it (another process, or another thread) is refused in
    one line: two commands writing one output cannot both say they wrote it (seen:
    two ``fit --force``, the one saying its result was not written owning the file).
    The claim is an abstract Unix socket named after the resolved path: the kernel
    releases it when the process ends, however it ends, and it leaves no file.
    """
    held = _claims.get()
    if held is None:
        return
    key = str(Path(path).expanduser().resolve())
    if key in held:
        return
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind("\0bam-output-" + hashlib.sha256(os.fsencode(key)).hexdigest())
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BamError(f"{what} {path} is being written by another command now; wait "
                           "for it to end or choose another path") from None
        return  # no socket to be had: the no-replace moves below still guard the file
    held[key] = sock


# --- writing -------------------------------------------------------------------------

def disk_full(path: Path, what: str, exc: OSError, kept: bool | None = None) -> str:
    """The one line of a write that found no room (:data:`DISK_FULL`). ``kept``: whether
    a file was already at ``path`` (it is left as it was); None: look."""
    if kept is None:
        kept = path.exists()
    name = errno.errorcode.get(exc.errno or 0, "?")
    earlier = f"; what was at {path} is kept as it was" if kept else ""
    return (f"cannot write {what} {path}: no space left ({name}: {exc.strerror}); what "
            f"was partly written is removed{earlier}: free some space or choose another "
            "path")


@contextlib.contextmanager
def writing(path: str | os.PathLike, what: str) -> Iterator[None]:
    """A full disk inside the block (:data:`DISK_FULL`) as a one-line BamError; the block
    removes what it wrote partly (a temporary file) on its way out."""
    path = Path(path).expanduser()
    kept = path.exists()
    try:
        yield
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        raise BamError(disk_full(path, what, exc, kept)) from None


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
    meanwhile is kept and a one-line BamError says so. Nothing is left behind on error;
    a full disk is one line (:func:`writing`).
    """
    path = Path(path).expanduser()
    claim(path, what)
    with writing(path, what):
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

    With ``force`` and an existing folder, the block's files then replace theirs one by
    one (the user asked to overwrite; its other files are kept): a block that fails (a
    full disk) leaves it as it was.
    """
    path = Path(path).expanduser()
    claim(path, what)
    with writing(path, what):
        check_kind(path, what, folder=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name[:200]}.",
                                    suffix=".tmp"))
        try:
            yield tmp
            publish(tmp, path, what, force)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def publish(tmp: Path, path: Path, what: str, force: bool = False) -> None:
    """Move the finished ``tmp`` to ``path``; without ``force``, never over anything, and
    never over what no output may replace (:func:`check_kind`), looked at again here.

    A file is hard-linked (``link`` fails if the target exists, atomically) and
    the temporary name removed. A folder claims ``path`` with ``mkdir`` (atomic
    too) and ``rename`` then replaces the empty claim (or an empty folder already
    there); ``rename`` refuses a folder another writer has filled meanwhile. With
    ``force``, a folder's files replace their namesakes in an existing one.
    """
    claim(path, what)
    try:
        check_kind(path, what, folder=tmp.is_dir())
        if tmp.is_dir() and force and path.is_dir():
            _merge(tmp, path, what)
        elif tmp.is_dir():
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
                           f"ran; it is kept as the other wrote it, and this command's "
                           f"{what} is not written: choose another path") from None
        if exc.errno in DISK_FULL:
            raise BamError(disk_full(path, what, exc)) from None
        raise BamError(f"cannot write {what} {path}: {exc.strerror}; choose another "
                       "path") from None


def _merge(tmp: Path, folder: Path, what: str) -> None:
    """Move what ``tmp`` holds into the existing ``folder``, each file replacing its
    namesake there (a regular file only, :func:`check_kind`); the others are kept."""
    for item in sorted(tmp.iterdir()):
        target = folder / item.name
        if item.is_dir() and target.is_dir():
            _merge(item, target, what)
            continue
        check_kind(target, what, folder=item.is_dir())
        os.replace(item, target)
