"""The actuators known to this process: the shipped ones and those declared in files.

The shipped actuators are the files of ``shipped/`` (their constants' sources are
written in each), read once at import. A servo the project does not ship is declared
with its own file (:mod:`bam_sim.models.servo.actuator_file`) at a program's edge: a
tool's ``--actuator-file``, a node's ``actuator_file`` parameter, a joint map's
``actuator_files``, a parameter file's ``actuator_file``. From then on it is named like a
shipped one.
"""

from __future__ import annotations

import os
from importlib import resources

import yaml

from bam_sim.common.errors import BamError
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuator_file import load_actuator_file, parse_actuator


def _shipped() -> dict[str, Actuator]:
    folder = resources.files("bam_sim.models.servo") / "shipped"
    found = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            a = parse_actuator(yaml.safe_load(entry.read_text(encoding="utf-8")),
                               f"shipped/{entry.name}")
            found[a.name] = a
    # The registry's order is the docs' and the launch files' order: as the paper lists
    # its servos, then the others.
    first = [n for n in ("mx64", "mx106", "erob80_50", "erob80_100", "xl320", "xl330",
                         "sts3215", "sts3215_12v", "st3025", "dcmotor") if n in found]
    return {n: found[n] for n in first + sorted(set(found) - set(first))}


ACTUATORS: dict[str, Actuator] = _shipped()
_DECLARED: dict[str, Actuator] = {}


def declare(actuator: Actuator) -> Actuator:
    """Make a declared actuator known by name; the same declaration again is a no-op, a
    different one under a known name is refused."""
    known = ACTUATORS.get(actuator.name) or _DECLARED.get(actuator.name)
    if known is not None and known != actuator:
        origin = "a shipped actuator" if actuator.name in ACTUATORS else \
            f"declared by {known.source}"
        raise BamError(f"actuator file {actuator.source or '?'} declares '{actuator.name}', "
                       f"which is {origin} with other values; give it another name")
    if known is None:
        _DECLARED[actuator.name] = actuator
    return known or actuator


def declare_file(path: str | os.PathLike) -> Actuator:
    """Read an actuator file and declare its actuator (the edges' one call)."""
    return declare(load_actuator_file(path))


def declare_files(paths) -> list[Actuator]:
    """:func:`declare_file` of each path (None or empty: none)."""
    return [declare_file(p) for p in paths or ()]


def get_actuator(name: str) -> Actuator:
    """Lookup by name (mx64, mx106, xl320, xl330, sts3215, sts3215_12v, st3025, erob80_50,
    ..., or one declared from a file)."""
    key = str(name).strip().lower()
    found = ACTUATORS.get(key) or _DECLARED.get(key)
    if found is None:
        raise BamError(f"unknown actuator '{name}'; choose one of "
                       f"{', '.join([*ACTUATORS, *_DECLARED])}, or declare it in an actuator "
                       "file (--actuator-file FILE, docs: how-to/actuator-files)")
    return found


def law_siblings(actuator: Actuator) -> tuple[Actuator, ...]:
    """The same servo under another firmware law: the actuators of another family that
    name its driver and control table (its other operating modes, e.g. the XL330's
    current-based position mode beside its position mode)."""
    if not actuator.control_table:
        return ()
    return tuple(a for a in (*ACTUATORS.values(), *_DECLARED.values())
                 if (a.driver, a.control_table) == (actuator.driver, actuator.control_table)
                 and a.family != actuator.family)


DRIVERS: tuple[str, ...] = tuple(dict.fromkeys(a.driver for a in ACTUATORS.values() if a.driver))


def driven_by(driver: str) -> tuple[str, ...]:
    """The shipped actuators ``driver`` runs, in registry order (every list of them
    derives here)."""
    if driver not in DRIVERS:
        raise BamError(f"unknown driver '{driver}'; choose one of {', '.join(DRIVERS)}")
    return tuple(name for name, a in ACTUATORS.items() if a.driver == driver)
