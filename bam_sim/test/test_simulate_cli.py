"""The ``simulate`` demo executable."""

from __future__ import annotations

from bam_sim.bench.simulate_cli import main


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
    assert "already exists; pass --force" in capsys.readouterr().err
    assert out.read_bytes() == b"keep"


def test_simulate_params_for_another_actuator(tmp_path, capsys):
    from bam_sim.models.parameter_file import published, save

    path = save(published("mx106", "m2"), tmp_path / "p.yaml")
    assert main(["--actuator", "mx64", "--params", str(path),
                 "--output", str(tmp_path / "s.png")]) == 2
    assert "is for actuator mx106, not mx64" in capsys.readouterr().err
