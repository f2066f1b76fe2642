"""Exact rewrites of one BAM friction model as another, for readers that lack a model.

M3 and M4 load the gearbox with the transmitted torque |τ_m − τ_e| (equations 7, 8);
M5 with |K_m τ_m − K_e τ_e| (9). With K_m = K_e = K_l, |K_l τ_m − K_l τ_e| =
K_l |τ_m − τ_e| because K_l ≥ 0, and likewise for the Stribeck terms, so::

    M4(K_c, K_c^s, K_l, K_l^s, v_s, α, K_v)
        = M5(K_c, K_c^s, K_m = K_e = K_l, K_m^s = K_e^s = K_l^s, v_s, α, K_v)
    M3(K_c, K_l, K_v)
        = M5(K_c, K_c^s = 0, K_m = K_e = K_l, K_m^s = K_e^s = 0, v_s, α, K_v)

for every state. M3 has no Stribeck term: its M5 carries every Stribeck level at 0,
so the Stribeck factor multiplies zero and its shape (v_s, α) is free; it takes the
registry's starting values. The budgets agree up to the rounding of K_l τ_m − K_l τ_e
against K_l (τ_m − τ_e) (a few ulps).
"""

from __future__ import annotations

from bam_sim.models.model_registry import FRICTION_MODELS, FrictionModel
from bam_sim.models.parameter_set import ParameterSet

DIRECTIONAL = FRICTION_MODELS["m5"]
# The directional pairs (motor side, external side) each non-directional level becomes.
_SPLIT = {"load_friction_base": ("load_friction_motor", "load_friction_external"),
          "load_friction_stribeck": ("load_friction_motor_stribeck",
                                     "load_friction_external_stribeck")}
# The models that have an exact directional form.
EQUIVALENT: dict[FrictionModel, FrictionModel] = {FRICTION_MODELS["m3"]: DIRECTIONAL,
                                                 FRICTION_MODELS["m4"]: DIRECTIONAL}


def as_directional(params: ParameterSet) -> ParameterSet:
    """The M5 set whose budget is the budget of an M3 or M4 set (module docstring)."""
    values = {name: value for name, value in params.values.items() if name not in _SPLIT}
    for level, pair in _SPLIT.items():
        for name in pair:
            values[name] = params.values.get(level, 0.0)
    target = EQUIVALENT[params.model]
    if "friction_stribeck" not in params.values:  # M3: no Stribeck term at all
        shape = target.defaults(params.actuator.scales)
        values |= {"friction_stribeck": 0.0, "dtheta_stribeck": shape["dtheta_stribeck"],
                   "alpha": shape["alpha"]}
    provenance = {**params.provenance, "rewritten_from": params.model.name}
    return ParameterSet.build(params.actuator, target, values, provenance)
