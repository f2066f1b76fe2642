"""Generate bam_sim/bam_sim/published/*.yaml from the published parameter tables.

Usage: python tools/import_published.py ../shared/reference/identified-parameters.md

Reads the per-actuator markdown tables of the published identified parameters
(figures of the paper's authors, cited in every generated file) and writes one
ROS 2 parameter file per actuator and model. Run it again only if the
reference tables change; the generated files are committed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bam_sim.models.files.parameter_file import PUBLISHED_CITATION, dump_yaml
from bam_sim.models.parameter_set import ParameterSet

OUT = Path(__file__).resolve().parents[1] / "bam_sim" / "bam_sim" / "models" / "published"


def parse_tables(text: str) -> dict[str, dict[str, dict[str, float]]]:
    """{actuator: {model: {param: value}}} from '### actuator' sections."""
    tables: dict[str, dict[str, dict[str, float]]] = {}
    for section in re.split(r"^### ", text, flags=re.M)[1:]:
        actuator = section.split()[0]
        rows = [line for line in section.splitlines() if line.startswith("|")]
        models = [c.strip() for c in rows[0].strip("|").split("|")][1:]
        sets: dict[str, dict[str, float]] = {m: {} for m in models}
        for row in rows[2:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            for model, cell in zip(models, cells[1:], strict=True):
                if cell:
                    sets[model][cells[0]] = float(cell)
        tables[actuator] = sets
    return tables


def main() -> None:
    text = Path(sys.argv[1]).read_text(encoding="utf-8")
    OUT.mkdir(parents=True, exist_ok=True)
    for actuator, sets in parse_tables(text).items():
        for model, values in sets.items():
            provenance = {"source": "published", "citation": PUBLISHED_CITATION,
                          "reference": "shared/reference/identified-parameters.md"}
            params = ParameterSet.from_names(actuator, model, values, provenance)
            (OUT / f"{actuator}_{model}.yaml").write_text(dump_yaml(params), encoding="utf-8")
            print(f"wrote {actuator}_{model}.yaml")


if __name__ == "__main__":
    main()
