"""Reading a dcmotor MJCF written for MuJoCo 3.11 with the MuJoCo 4 installed here (tests).

MuJoCo 4 refuses ``input="position"``, so a file of the 3.11 convention cannot
be loaded as it is. :func:`migrate_to_312` applies the migration that MuJoCo
3.12.0's changelog prescribes (Actuation, item 5): ``input="position"`` becomes
``input="pos"``, the controller's kp, ki and kd are multiplied by K/R and K²/R is
added to kd. What it gives back is the MJCF as a user upgrading to MuJoCo 3.12
would write it; the real MuJoCo 3.11 runs the file in
``benchmarks/mujoco_versions.py``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from bam_sim.mujoco_arm.dcmotor_export import torque_space_gains


def dcmotors(xml: str) -> list[dict[str, str]]:
    """The attributes of every ``<dcmotor>`` of an MJCF, in order."""
    return [dict(e.attrib) for e in ET.fromstring(xml).iter("dcmotor")]


def controller(attributes: dict[str, str]) -> list[float]:
    """The six numbers of a dcmotor's ``controller`` (kp ki kd slewmax Imax Vmax)."""
    return [float(x) for x in attributes["controller"].split()]


def migrate_to_312(xml: str) -> str:
    """The MJCF with each 3.11-convention dcmotor converted by the 3.12.0 migration rule."""
    root = ET.fromstring(xml)
    for element in root.iter("dcmotor"):
        if element.get("input") != "position":
            continue
        values = controller(dict(element.attrib))
        resistance = float(element.get("resistance"))
        motorconst = float(element.get("motorconst"))
        values[:3] = torque_space_gains(*values[:3], resistance, motorconst)
        element.set("input", "pos")
        element.set("controller", " ".join(repr(v) for v in values))
    return ET.tostring(root, encoding="unicode")
