"""The ``simulate`` demo executable."""

from __future__ import annotations

from bam_sim.simulate_cli import main


def test_simulate_writes_figures(tmp_path, capsys):
    out, diagram = tmp_path / "sim.png", tmp_path / "diag.png"
    assert main(["--actuator", "erob80_50", "--model", "m6", "--trajectory", "raise_lower",
                 "--output", str(out), "--diagram", str(diagram)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG" and diagram.read_bytes()[:4] == b"\x89PNG"
    assert "m6 vs m1: mean |Δq|" in capsys.readouterr().out


def test_simulate_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "sim.png"
    out.write_bytes(b"keep")
    assert main(["--output", str(out)]) == 2
    assert "already exists; choose another path or pass --force" in capsys.readouterr().err
    assert out.read_bytes() == b"keep"


def test_simulate_params_for_another_actuator(tmp_path, capsys):
    from bam_sim.models.files.parameter_file import published_named, save

    path = save(published_named("mx106", "m2"), tmp_path / "p.yaml")
    assert main(["--actuator", "mx64", "--params", str(path),
                 "--output", str(tmp_path / "s.png")]) == 2
    assert "is for actuator mx106, not mx64" in capsys.readouterr().err


def test_simulate_a_dcmotor_set_reports_its_winding_temperature(tmp_path, capsys):
    from bam_sim.bench.geometry import Bench
    from bam_sim.bench.rollouts import rollout
    from bam_sim.bench.trajectory import command_log
    from bam_sim.models.files.parameter_file import save
    from bam_sim.models.parameter_set import ParameterSet

    params = ParameterSet.from_names("dcmotor", "lugre", {
        "resistance": 2.0, "motorconst": 0.5, "armature": 0.01, "thermal.resistance": 4.0,
        "thermal.capacitance": 2.0, "thermal.ambient": 21.0, "lugre.stiffness": 200.0,
        "lugre.damping": 3.0, "lugre.coulomb": 0.05, "lugre.static": 0.1,
        "lugre.stribeck": 0.2, "lugre.viscous": 0.05})
    path = save(params, tmp_path / "motor.yaml")
    out = tmp_path / "sim.png"
    assert main(["--actuator", "dcmotor", "--params", str(path), "--trajectory", "lift_drop",
                 "--kp", "20", "--mass", "1", "--length", "0.15", "--output", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    text = capsys.readouterr().out
    run = rollout(params, command_log("lift_drop", Bench(1.0, 0.15), 20.0))
    assert f"lugre+thermal: winding temperature 21.00 → {run.temperature[-1]:.2f} °C" in text
    assert run.temperature[-1] > 22.0 and "vs m1" not in text
