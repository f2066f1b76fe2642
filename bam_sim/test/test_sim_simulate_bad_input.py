"""Bad input to ``simulate``: one line, exit 2, no figure written, nothing replaced; a
diverged rollout is refused rather than reported as a model comparison."""

from __future__ import annotations

import numpy as np
import pytest

from bam_sim.bench.geometry import Bench
from bam_sim.bench.rollouts import rollout
from bam_sim.bench.trajectory import command_log
from bam_sim.models.files.parameter_file import published_named, save
from bam_sim.simulate_cli import main

CASES = {
    "nan step": (["--dt", "nan"], "argument --dt: must be a finite number, got nan"),
    "memory-exhausting step": (["--dt", "1e-9"], "argument --dt: must be in [0.0001, 0.05]"),
    "unstable step": (["--dt", "0.5"], "argument --dt: must be in [0.0001, 0.05], got 0.5"),
    "absurd gain": (["--kp", "1e308"], "argument --kp: must be in (0, 10000], got 1e+308"),
    "gain above the servo's": (["--kp", "300"], "--kp 300 is above the largest gain 254"),
    "zero mass": (["--mass", "0"], "argument --mass: must be in (0, 100], got 0"),
    "negative length": (["--length", "-0.1"], "argument --length: must be in (0, 5]"),
    "text file": (["--output", "{tmp}/x.txt"],
                  "unsupported file type '.txt'; give a name ending in .png, .pdf, .svg"),
    "long name": (["--output", "{tmp}/" + "n" * 300 + ".png"], "is 304 bytes long"),
    "figure over its parameters": (["--params", "{tmp}/m4.yaml", "--output", "{tmp}/m4.yaml",
                                    "--force"], "is the input --params"),
    "diagram over the figure": (["--output", "{tmp}/a.png", "--diagram", "{tmp}/a.png"],
                                "--diagram {tmp}/a.png is the input --output"),
    "existing figure": (["--output", "{tmp}/taken.png"], "already exists"),
    # a 1 cm pendulum of 10 g at the largest gain and a 50 ms step: the explicit servo
    # loop blows up (|q| of tens of radians), which is no model comparison
    "diverged rollout": (["--mass", "0.01", "--length", "0.01", "--kp", "254", "--dt", "0.05",
                          "--output", "{tmp}/d.png"], "rollout diverged"),
}


@pytest.mark.parametrize("case", CASES)
def test_simulate_refuses_bad_input_in_one_line(case, tmp_path, capsys):
    extra, message = CASES[case]
    save(published_named("mx64", "m4"), tmp_path / "m4.yaml")
    (tmp_path / "taken.png").write_bytes(b"keep")
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    try:
        code = main([a.replace("{tmp}", str(tmp_path)) for a in extra])
    except SystemExit as exit_:  # argparse's refusals
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert message.replace("{tmp}", str(tmp_path)) in err, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_the_refused_rollout_did_diverge_and_a_stable_one_passes(tmp_path, capsys):
    """The check refuses what the simulator really blew up on, and nothing sane."""
    log = command_log("lift_drop", Bench(0.01, 0.01), 254.0, 0.05)
    position = rollout(published_named("mx64", "m1"), log).position
    assert not np.all(np.isfinite(position)) or np.max(np.abs(position)) > 2 * np.pi + 1.5
    out = tmp_path / "ok.png"
    assert main(["--kp", "32", "--dt", "0.001", "--output", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG" and "m4 vs m1" in capsys.readouterr().out
