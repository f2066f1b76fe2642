"""Read LeRobot datasets (format v2.0, v2.1 and v3.0) into robot recordings, with pyarrow.

A dataset folder holds ``meta/info.json`` (``codebase_version``, ``fps``, and ``features``:
each feature's dtype, shape and, where recorded, the names of its entries) and the frames
as parquet files under ``data/``:

* v2.0 and v2.1: ``data/chunk-XXX/episode_XXXXXX.parquet``, one episode per file;
* v3.0: ``data/chunk-XXX/file-XXX.parquet``, several episodes per file.

A frame row holds ``observation.state`` (the measured positions, one vector per row),
``action`` (the goals sent), ``timestamp`` (s into the episode) and ``episode_index``.
Rows are grouped by ``episode_index``, so both layouts read alike.

Each joint's entry is found by name where the dataset names every joint of the map (a
name ``shoulder_pan.pos`` names joint ``shoulder_pan``), else at the joint map's reading
column; each is converted to radians by its reading. Positions reaching beyond one turn
are refused as a unit mix-up. The other way round (degrees that are radians) has no safe
rule: a still robot near zero reads small in any unit, so it is only a warning, when every
degree joint stays within ±π degrees over 10 s of frames or more.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np

from bam_identify.data import resample
from bam_sim.common.errors import BamError, one_line
from bam_sim.robot.joint_map import JointMap
from bam_sim.robot.recording import RobotRecording

LOG = logging.getLogger(__name__)

VERSIONS = ("v2.0", "v2.1", "v3.0")
STATE, ACTION, TIMESTAMP, EPISODE = "observation.state", "action", "timestamp", "episode_index"
MIN_FPS = 20.0  # slower frames alias the servo law's motion
TURN = 2.0 * math.pi
IRREGULAR = 0.01  # of the period: frames further off the fps grid are resampled onto it
HINTS = {"rad": "is it in degrees? set reading unit: deg",
         "deg": "is it in ticks? set reading unit: ticks (with its zero)",
         "ticks": "check its reading zero and ticks_per_turn"}


def _info(folder: Path) -> dict:
    """meta/info.json, checked for the version and the frame rate."""
    path = folder / "meta" / "info.json"
    if not path.is_file():
        raise BamError(f"{folder} is not a LeRobot dataset (no meta/info.json): give the "
                       "dataset's root folder")
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BamError(f"cannot read {path} ({one_line(err)}): is the dataset complete?") \
            from None
    version = info.get("codebase_version") if isinstance(info, dict) else None
    if version not in VERSIONS:
        raise BamError(f"{folder}: LeRobot format {version!r} is not read (only "
                       f"{', '.join(VERSIONS)}): convert it with LeRobot's dataset converter")
    fps = info.get("fps")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not fps >= MIN_FPS:
        raise BamError(f"{folder}: frames at {fps!r} fps are too slow for the servo law: "
                       f"record at {MIN_FPS:g} fps at least")
    return info


def _frames(folder: Path) -> dict[str, np.ndarray]:
    """The four columns of every frame, over all data files: vectors as (rows, width)."""
    import pyarrow as pa  # here: only a LeRobot dataset needs it
    import pyarrow.parquet as pq
    files = sorted((folder / "data").glob("**/*.parquet"))
    if not files:
        raise BamError(f"{folder} holds no frames (data/**/*.parquet): is the dataset complete?")
    tables = []
    for file in files:
        missing = [c for c in (STATE, ACTION, TIMESTAMP, EPISODE)
                   if c not in pq.read_schema(file).names]
        if missing:
            raise BamError(f"{file} has no column '{missing[0]}': record the robot's "
                           f"{STATE}, {ACTION}, {TIMESTAMP} and {EPISODE}")
        tables.append(pq.read_table(file, columns=[STATE, ACTION, TIMESTAMP, EPISODE]))
    table = pa.concat_tables(tables)
    frames = {key: _matrix(table[key], key, folder) for key in (STATE, ACTION)}
    # A scalar feature may be stored as a one-value list (its shape in info.json is (1,)).
    frames[TIMESTAMP] = _matrix(table[TIMESTAMP], TIMESTAMP, folder)[:, 0]
    frames[EPISODE] = _matrix(table[EPISODE], EPISODE, folder)[:, 0].astype(np.int64)
    return frames


def _matrix(column, key: str, folder: Path) -> np.ndarray:
    """A column of vectors (a list or fixed-size list per row) or numbers as (rows, width)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = column.combine_chunks()
    if not (pa.types.is_list(values.type) or pa.types.is_large_list(values.type)
            or pa.types.is_fixed_size_list(values.type)):
        return np.asarray(values, dtype=np.float64).reshape(-1, 1)
    widths = pc.list_value_length(values).to_numpy(zero_copy_only=False)
    if values.null_count or len(values) == 0 or widths.min() != widths.max():
        raise BamError(f"{folder}: the rows of {key} are empty or of different widths: "
                       "every frame must hold one value per joint")
    flat = values.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    return flat.reshape(len(values), int(widths[0]))


def _names(info: dict, key: str) -> list[str] | None:
    """The names of ``key``'s entries in meta/info.json, without a '.pos' suffix; or None."""
    names = (info.get("features") or {}).get(key, {}).get("names")
    if isinstance(names, dict):  # datasets converted from v1: {"motors": [...]}
        names = next(iter(names.values()), None)
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return [n.removesuffix(".pos") for n in names]
    return None


def _columns(joint_map: JointMap, names: list[str] | None, width: int, key: str,
             folder: Path) -> list[int]:
    """Each joint's index in ``key``'s vectors: by name where the dataset names every
    joint, else the joint map's reading column (checked against the names there are)."""
    if names and all(name in names for name in joint_map.names):
        return [names.index(name) for name in joint_map.names]
    for joint in joint_map.joints:
        column = joint.reading.column
        if column >= width:
            raise BamError(f"{folder}: joint '{joint.joint}' reads column {column} of {key}, "
                           f"which holds {width} values: fix the joint's reading column")
        named = names[column] if names and column < len(names) else None
        if named in joint_map.names and named != joint.joint:
            raise BamError(f"{folder}: column {column} of {key} is '{named}' in "
                           f"meta/info.json, but the joint map reads joint '{joint.joint}' "
                           "there: fix the reading columns or the joint names")
    return [joint.reading.column for joint in joint_map.joints]


def _radians(joint_map: JointMap, raw: np.ndarray, key: str, folder: Path) -> np.ndarray:
    """``raw`` (rows, n), the joints' readings, in radians; a unit mix-up refused by range."""
    q = np.column_stack([j.reading.to_radians(raw[:, i]) for i, j in enumerate(joint_map.joints)])
    for joint, x in zip(joint_map.joints, q.T):
        reach = float(np.abs(x).max())
        if reach > TURN or float(np.ptp(x)) > TURN:
            raise BamError(f"{folder}: joint '{joint.joint}' reads up to {reach:.0f} rad in "
                           f"{key}: {HINTS[joint.reading.unit]}")
    return q


def _warn_degrees(joint_map: JointMap, raw: np.ndarray, fps: float, folder: Path) -> None:
    degrees = [i for i, j in enumerate(joint_map.joints) if j.reading.unit == "deg"]
    if degrees and len(raw) >= 10.0 * fps and np.abs(raw[:, degrees]).max() <= math.pi:
        LOG.warning(f"{folder}: every joint read in degrees stays within ±π degrees over "
                    f"{len(raw) / fps:.0f} s of frames: if they are radians, set reading "
                    "unit: rad")


def _episode(name: str, t: np.ndarray, q: np.ndarray, goal: np.ndarray, fps: float,
             gain: np.ndarray) -> RobotRecording:
    """One episode's frames (t (T,), q and goal (T, n)), on the fps grid from its first."""
    order = np.argsort(t, kind="stable")
    t, q, goal = t[order] - t[order][0], q[order], goal[order]
    period = 1.0 / fps
    if t.size > 1 and np.abs(np.diff(t) - period).max() > IRREGULAR * period:
        at = resample.grid(float(t[-1]), period)
        q = np.column_stack([np.interp(at, t, x) for x in q.T])
        goal = np.column_stack([resample.hold(at, t, g) for g in goal.T])
    time = np.arange(len(q)) * period
    return RobotRecording(name, time, q, goal, gain, np.ones(q.shape, dtype=bool))


def read_lerobot(folder: str | Path, joint_map: JointMap,
                 episodes: list[int] | None = None) -> list[RobotRecording]:
    """The ``episodes`` of the LeRobot dataset at ``folder`` (default: all, in episode order),
    one recording each: ``observation.state`` the measured positions, ``action`` the goals,
    the joint map's gains, torque on; frames off the fps grid are resampled onto it
    (positions linearly, goals held)."""
    folder = Path(folder)
    unknown = [j.joint for j in joint_map.joints if j.gain is None]
    if unknown:
        raise BamError(f"joint '{unknown[0]}' has gain: recorded, but a LeRobot dataset does "
                       "not record it: give the joint's gain in the joint map")
    info = _info(folder)
    fps = float(info["fps"])
    frames = _frames(folder)
    raw = {}
    for key in (STATE, ACTION):
        columns = _columns(joint_map, _names(info, key), frames[key].shape[1], key, folder)
        raw[key] = frames[key][:, columns]
    _warn_degrees(joint_map, raw[STATE], fps, folder)
    q, goal = (_radians(joint_map, raw[key], key, folder) for key in (STATE, ACTION))
    present = np.unique(frames[EPISODE])
    wanted = present if episodes is None else np.asarray(episodes, dtype=np.int64)
    absent = np.setdiff1d(wanted, present)
    if absent.size:
        raise BamError(f"{folder} has no episode {absent[0]} (it holds episodes "
                       f"{present.min()}..{present.max()}): choose among those")
    gain = np.array([j.gain for j in joint_map.joints], dtype=np.float64)
    recordings = []
    for index in wanted:
        rows = frames[EPISODE] == index
        recordings.append(_episode(f"{folder.name}#episode {index}", frames[TIMESTAMP][rows],
                                   q[rows], goal[rows], fps, gain))
    return recordings
