"""Import of the reference implementation's (legacy BAM) file formats.

Parameter files there are one flat JSON object: each parameter by the names of
``reference/identified-parameters.md`` plus ``"model"`` and ``"actuator"``.
They are read with ``json.loads`` and validated exactly like our YAML files.
"""

from __future__ import annotations

import json

from bam_sim.common.errors import BamError
from bam_sim.models.parameter_set import ParameterSet


def parameters_from_json(text: str, where: str = "<string>") -> ParameterSet:
    """Parse a legacy BAM JSON parameter file into a ParameterSet."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BamError(f"{where} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise BamError(f"{where} must hold a JSON object of parameter names to values")
    for key in ("actuator", "model"):
        if not isinstance(doc.get(key), str):
            raise BamError(f"{where} has no \"{key}\" entry; add it (e.g. \"{key}\": "
                           f"\"{'mx64' if key == 'actuator' else 'm4'}\")")
    values = {k: v for k, v in doc.items() if k not in ("actuator", "model")}
    provenance = {"source": "legacy BAM JSON", "imported_from": where}
    return ParameterSet.build(doc["actuator"], doc["model"], values, provenance, where)
