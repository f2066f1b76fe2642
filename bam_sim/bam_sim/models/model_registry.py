"""The registry of friction models: their ids, parameters, bounds and defaults.

Plain data, no numerics: the CLI, the parameter files and the drivers read
it without loading numba. The kernels of :mod:`bam_sim.models.bam.friction`
branch on the integer ids.

Three families share the registry:

* BAM's extended friction models M1..M6 (ids 1..6, Duclusaud, Passault et
  al., equations 3, 6-10): a friction *budget* applied by Algorithm 1's clip;
* the chattering-free elasto-plastic models ``ep_*`` (ids ``EP_FIRST`` + the
  form of :mod:`bam_sim.models.elastoplastic.model`; Cisneros et al.,
  ``reference/chattering-free-stiction.md``): a friction *force* from Φ_Z
  (17) with a deflection state e carried between steps (Algorithm 1 of that
  paper). Their parameters reuse BAM's names where the meaning is the same
  (K_c = F_C, K_c^s = F_S − F_C, K_v = D, v_s = v_S, K_l, K_l^s) and add the
  virtual spring-damper K, B (``contact_stiffness``, ``contact_damping``);
* LuGre (``lugre``, id ``LUGRE_ID``; "MuJoCo DC Motor Model", (9)-(11)): the
  friction force of MuJoCo's dcmotor with its bristle state, computed by the
  motor model (:mod:`bam_sim.models.dcmotor.groups`), its parameters named as the
  document's ``lugre`` attribute (Table 12) plus σ2 as ``lugre.viscous``.
"""

from __future__ import annotations

from dataclasses import dataclass

from bam_sim.common.errors import BamError

M1, M2, M3, M4, M5, M6 = 1, 2, 3, 4, 5, 6
# Elasto-plastic ids: EP_FIRST + form (EP_CV, EP_STRIBECK, EP_RATIONAL, EP_LOAD = 0..3 of
# elastoplastic.py), so a kernel gets the form by one subtraction.
EP_FIRST = 10
EP_CV_ID, EP_STRIBECK_ID, EP_RATIONAL_ID, EP_LOAD_ID = 10, 11, 12, 13
# LuGre (the DC-motor document's (9)-(11)): a friction force of the motor model with
# the bristle state; ids from LUGRE_ID on are not elasto-plastic.
LUGRE_ID = 20
BAM_PAPER = "Duclusaud et al."


@dataclass(frozen=True)
class ParamSpec:
    """One identifiable parameter: its bounds, default and unit.

    ``scale`` names an actuator-dependent scale ("friction" in N·m, "viscous"
    in N·m·s/rad, "stiffness" in N·m/rad, "damping" in N·m·s/rad) by which
    ``lower``, ``upper`` and ``default`` are multiplied, because a friction of
    0.1 N·m is large for an MX-64 and negligible for an eRob80:100. ``None``
    means the numbers are absolute.
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
        # The actuator scales put the box where sticking is stable at the Table I
        # benches and a 5 ms step (T·(K·T + 2B) < 4J); the fit refuses the rest
        # (bam_identify.fitting.fit), so the bounds need not be exact.
        ParamSpec("contact_stiffness", "K", "N·m/rad", 0.01, 1.0, 0.3, "stiffness"),
        ParamSpec("contact_damping", "B", "N·m·s/rad", 0.001, 1.0, 0.2, "damping"),
        # LuGre, Table 12 and σ2 of (9b). The bristle spring-damper acts explicitly on
        # the joint like the elasto-plastic one: the same scales, and the fit refuses
        # what the step cannot hold (models/motor_groups.lugre_violation).
        ParamSpec("lugre.stiffness", "σ0", "N·m/rad", 0.01, 1.0, 0.2, "stiffness"),
        ParamSpec("lugre.damping", "σ1", "N·m·s/rad", 0.01, 2.0, 0.5, "damping"),
        ParamSpec("lugre.coulomb", "τ_c", "N·m", 0.0, 1.0, 0.2, "friction"),
        ParamSpec("lugre.static", "τ_s", "N·m", 0.0, 2.0, 0.4, "friction"),
        ParamSpec("lugre.stribeck", "ω_s", "rad/s", 0.05, 5.0, 0.5),
        ParamSpec("lugre.viscous", "σ2", "N·m·s/rad", 0.0, 1.0, 0.2, "viscous"),
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
    """A registry entry: the model's id, its parameters and their specs.

    ``equation`` is the number of the friction function in ``paper``: BAM's
    (Duclusaud et al.) for M1..M6, Cisneros et al.'s for ``ep_*``.
    """

    name: str
    model_id: int
    title: str
    equation: int
    params: tuple[str, ...]
    paper: str = BAM_PAPER

    @property
    def elastoplastic(self) -> bool:
        """True for the ``ep_*`` models: a friction force with a state, not a budget."""
        return EP_FIRST <= self.model_id < LUGRE_ID

    @property
    def lugre(self) -> bool:
        """True for LuGre: a friction force of the DC-motor model, with the bristle state."""
        return self.model_id == LUGRE_ID

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
# Φ (21) and (33) have α = 1 (the closed forms of Φ_Z need it): no "alpha".
_EP_STRIBECK = ("friction_stribeck", "dtheta_stribeck")
_CONTACT = ("contact_stiffness", "contact_damping")
_CISNEROS = "Cisneros et al."
FRICTION_MODELS: dict[str, FrictionModel] = {
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
        FrictionModel("ep_cv", EP_CV_ID, "elasto-plastic Coulomb-viscous", 19,
                      _BASE + _CONTACT, _CISNEROS),
        FrictionModel("ep_stribeck", EP_STRIBECK_ID, "elasto-plastic Stribeck", 21,
                      _BASE + _EP_STRIBECK + _CONTACT, _CISNEROS),
        FrictionModel("ep_rational", EP_RATIONAL_ID, "elasto-plastic rational", 33,
                      _BASE + _EP_STRIBECK + _CONTACT, _CISNEROS),
        # An extension: (21) with the levels of BAM's M4 budget (equation 8).
        FrictionModel("ep_load", EP_LOAD_ID, "elasto-plastic load-dependent Stribeck", 21,
                      _BASE + _EP_STRIBECK + ("load_friction_base", "load_friction_stribeck")
                      + _CONTACT, _CISNEROS),
        FrictionModel("lugre", LUGRE_ID, "LuGre", 9,
                      ("lugre.stiffness", "lugre.damping", "lugre.coulomb", "lugre.static",
                       "lugre.stribeck", "lugre.viscous"), "the DC-motor document"),
    )
}
BAM_MODELS = tuple(name for name, m in FRICTION_MODELS.items() if m.model_id < EP_FIRST)
EP_MODELS = tuple(name for name, m in FRICTION_MODELS.items() if m.elastoplastic)


def get_model(name: str) -> FrictionModel:
    """Registry lookup by name ("m1".."m6", "ep_cv", ..., case-insensitive)."""
    key = str(name).strip().lower()
    if key not in FRICTION_MODELS:
        raise BamError(f"unknown friction model '{name}'; "
                       f"choose one of {', '.join(FRICTION_MODELS)}")
    return FRICTION_MODELS[key]
