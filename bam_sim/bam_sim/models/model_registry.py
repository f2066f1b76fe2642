"""The registry of friction models: their ids, parameters, bounds and defaults.

Plain data, no numerics: the CLI, the parameter files and the drivers read
it without loading numba. The kernels of :mod:`bam_sim.models.friction`
branch on the integer ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from bam_sim.common.errors import BamError

M1, M2, M3, M4, M5, M6 = 1, 2, 3, 4, 5, 6


@dataclass(frozen=True)
class ParamSpec:
    """One identifiable parameter: its bounds, default and unit.

    ``scale`` names an actuator-dependent scale ("friction" in N·m, "viscous"
    in N·m·s/rad) by which ``lower``, ``upper`` and ``default`` are multiplied,
    because a friction of 0.1 N·m is large for an MX-64 and negligible for an
    eRob80:100. ``None`` means the numbers are absolute.
    """

    name: str
    symbol: str
    unit: str
    lower: float
    upper: float
    default: float
    scale: str | None = None


_SPECS = {
    s.name: s
    for s in (
        ParamSpec("friction_base", "K_c", "N·m", 0.0, 1.0, 0.2, "friction"),
        ParamSpec("friction_stribeck", "K_c^s", "N·m", 0.0, 1.0, 0.2, "friction"),
        ParamSpec("friction_viscous", "K_v", "N·m·s/rad", 0.0, 1.0, 0.2, "viscous"),
        ParamSpec("load_friction_base", "K_l", "-", 0.0, 1.0, 0.05),
        ParamSpec("load_friction_stribeck", "K_l^s", "-", 0.0, 1.0, 0.05),
        ParamSpec("load_friction_motor", "K_m", "-", 0.0, 1.0, 0.05),
        ParamSpec("load_friction_external", "K_e", "-", 0.0, 1.0, 0.05),
        ParamSpec("load_friction_motor_stribeck", "K_m^s", "-", 0.0, 1.0, 0.05),
        ParamSpec("load_friction_external_stribeck", "K_e^s", "-", 0.0, 1.0, 0.05),
        ParamSpec("load_friction_motor_quad", "K_m^q", "1/(N·m)", 0.0, 0.01, 0.001),
        ParamSpec("load_friction_external_quad", "K_e^q", "1/(N·m)", 0.0, 0.01, 0.001),
        ParamSpec("dtheta_stribeck", "v_s", "rad/s", 0.05, 5.0, 1.0),
        ParamSpec("alpha", "α", "-", 0.5, 3.0, 1.5),
    )
}

_STRIBECK = ("friction_stribeck", "dtheta_stribeck", "alpha")
_DIRECTIONAL = (
    "load_friction_motor",
    "load_friction_external",
    "load_friction_motor_stribeck",
    "load_friction_external_stribeck",
)


@dataclass(frozen=True)
class FrictionModel:
    """A registry entry: the model's id, its parameters and their specs."""

    name: str
    model_id: int
    title: str
    equation: int
    params: tuple[str, ...]

    def specs(self) -> tuple[ParamSpec, ...]:
        return tuple(_SPECS[name] for name in self.params)

    def bounds(self, scales: dict[str, float]) -> dict[str, tuple[float, float]]:
        """Identification bounds of each friction parameter, scaled for an actuator."""
        return {s.name: (s.lower * scales.get(s.scale, 1.0), s.upper * scales.get(s.scale, 1.0))
                for s in self.specs()}

    def defaults(self, scales: dict[str, float]) -> dict[str, float]:
        """Starting values of each friction parameter, scaled for an actuator."""
        return {s.name: s.default * scales.get(s.scale, 1.0) for s in self.specs()}


_BASE = ("friction_base", "friction_viscous")
MODELS: dict[str, FrictionModel] = {
    m.name: m
    for m in (
        FrictionModel("m1", M1, "Coulomb-viscous", 3, _BASE),
        FrictionModel("m2", M2, "Stribeck", 6, _BASE + _STRIBECK),
        FrictionModel("m3", M3, "load-dependent", 7, _BASE + ("load_friction_base",)),
        FrictionModel(
            "m4", M4, "Stribeck load-dependent", 8,
            _BASE + _STRIBECK + ("load_friction_base", "load_friction_stribeck"),
        ),
        FrictionModel("m5", M5, "directional", 9, _BASE + _STRIBECK + _DIRECTIONAL),
        FrictionModel(
            "m6", M6, "quadratic directional", 10,
            _BASE + _STRIBECK + _DIRECTIONAL
            + ("load_friction_motor_quad", "load_friction_external_quad"),
        ),
    )
}


def get_model(name: str) -> FrictionModel:
    """Registry lookup by name ("m1".."m6", case-insensitive)."""
    key = str(name).strip().lower()
    if key not in MODELS:
        raise BamError(f"unknown friction model '{name}'; choose one of {', '.join(MODELS)}")
    return MODELS[key]
