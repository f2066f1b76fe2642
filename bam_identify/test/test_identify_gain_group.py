"""The gain group: a scale r on a firmware P gain whose unit is not known."""

from __future__ import annotations

import pytest
import yaml

from bam_identify.cli import fit_main
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_sim.common.errors import BamError
from bam_sim.models.dcmotor.groups import group_error
from bam_sim.models.files.bam_json import parameters_to_json
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo.actuators import get_actuator
from bam_sim.models.servo.laws import servo_torque

RATIO = 1.6  # the servo's duty per radian is 1.6 times what its file's gain unit says


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    truth = published_named("mx64", "m1").replace(error_gain_ratio=RATIO)
    folder = tmp_path_factory.mktemp("gain_logs")
    for i, log in enumerate(paper_like_set(truth, 12, duration=3.0, seed=3)):
        write_legacy_log(folder / f"{i}.json", log, get_actuator("mx64"), log.meta["trajectory"])
    return folder, truth


def _fit(logs, tmp_path, name, *extra):
    out = tmp_path / f"{name}.yaml"
    code = fit_main([str(a) for a in ("--logs", logs, "--models", "m1", "--trials", 3000,
                                      "--seed", 1, "--output", out, "--report",
                                      tmp_path / f"report_{name}", "--quiet", *extra)])
    assert code == 0
    return yaml.safe_load(out.read_text())["/**"]["ros__parameters"]


@pytest.mark.numerics
def test_with_kt_held_the_gain_group_finds_the_scale_the_plain_law_cannot_fit(
        logs, tmp_path, capsys):
    folder, truth = logs
    held = f"kt={truth.values['kt']!r}"
    plain = _fit(folder, tmp_path, "plain", "--set", held)
    scaled = _fit(folder, tmp_path, "scaled", "--set", held, "--groups", "gain")
    # Noise-free logs: the law with r reproduces them to rounding; without r, k_t held, the
    # stiffness r·k_t/R and the damping k_t²/R cannot both be met (measured 0.038 rad).
    assert scaled["provenance"]["train_mae"] < 1e-6 < 1e-3 < plain["provenance"]["train_mae"]
    assert scaled["error_gain_ratio"] == pytest.approx(RATIO, rel=0.01)
    assert scaled["R"] == pytest.approx(truth.values["R"], rel=0.01)
    assert "gain scale r trades against kt" not in capsys.readouterr().err  # kt is held


def test_with_kt_free_the_fit_warns_that_the_scale_trades_against_kt_and_r(logs, tmp_path,
                                                                            capsys):
    folder, _ = logs
    _fit(folder, tmp_path, "free", "--groups", "gain", "--trials", 20)
    err = capsys.readouterr().err
    assert "gain scale r trades against kt and R" in err and "--set kt=" in err


def test_the_gain_group_is_the_sts_law_own_ratio_not_a_group_of_its_sets():
    assert published_named("sts3215", "m1").groups == ()
    scaled = published_named("mx64", "m4").replace(error_gain_ratio=RATIO)
    assert scaled.groups == ("gain",)
    # BAM's readers have no ratio for the MX law: refused in one line, not dropped.
    with pytest.raises(BamError, match="group gain of this mx64 m4 set"):
        parameters_to_json(scaled)


@pytest.fixture(scope="module")
def current_logs(tmp_path_factory):
    truth = published_named("xl330_current", "m1").replace(error_gain_ratio=RATIO)
    folder = tmp_path_factory.mktemp("current_gain_logs")
    for i, log in enumerate(paper_like_set(truth, 8, duration=3.0, seed=4)):
        write_legacy_log(folder / f"{i}.json", log, truth.actuator, log.meta["trajectory"])
    return folder, truth


@pytest.mark.numerics
def test_the_current_law_gain_group_finds_the_scale_of_a_current_servo(current_logs,
                                                                       tmp_path):
    folder, truth = current_logs
    held = f"kt={truth.values['kt']!r}"
    scaled = _fit(folder, tmp_path, "current", "--actuator", "xl330_current", "--set", held,
                  "--groups", "gain")
    # The current law's stiffness is k_t·kp·k_I·r: with k_t held, r is fixed by the holds.
    assert scaled["provenance"]["train_mae"] < 1e-4
    assert scaled["error_gain_ratio"] == pytest.approx(RATIO, rel=0.01)


def test_the_gain_group_scales_the_current_law_p_term_and_not_the_dcmotor_controller():
    base = published_named("xl330_current", "m1")
    scaled = base.replace(error_gain_ratio=RATIO)
    assert scaled.groups == ("gain",)
    a = base.actuator
    # The law with r is the law at r times the gain, while neither clips.
    for error in (0.05, -0.2):
        want, _ = servo_torque(a.family, base.vector(), a.consts(), 400.0 * RATIO, 0.0, 0.0,
                               error, True)
        got, _ = servo_torque(a.family, scaled.vector(), a.consts(), 400.0, 0.0, 0.0, error,
                              True)
        assert got == pytest.approx(want, rel=1e-12) and abs(got) < a.fixed["current_limit"]
    refusal = group_error("error_gain_ratio", get_actuator("dcmotor"), get_model("m1"))
    assert "belongs to the voltage and current family" in refusal
