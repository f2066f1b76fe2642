"""Bad input to the identification commands: one line, exit 2, nothing written or lost.

Each case runs a command's ``main`` as a user would and checks the exit code,
that the error is one line naming the problem, and that every file already
in the folder is byte-identical afterwards.
"""

from __future__ import annotations

import pytest
from identify_cases import mx64_session

from bam_identify.cli import eval_main, fit_main, recover_main
from bam_identify.data.bag_writer import write_bag
from bam_identify.protocol import parse_protocol
from bam_sim.common.errors import BamError
from bam_sim.models.parameter_file import published, save


@pytest.fixture(scope="module")
def bag(tmp_path_factory):
    return write_bag(tmp_path_factory.mktemp("bags") / "bench", [mx64_session(duration=0.5)])


def snapshot(folder):
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


FIT_CASES = {
    "popsize 1": (["--popsize", "1"], "--popsize must be in [2, 100000]"),
    "negative popsize": (["--popsize", "-3"], "--popsize must be in [2, 100000]"),
    "memory-exhausting dt": (["--dt", "1e-12"], "--dt must be in [0.0001, 1) s"),
    "zero trials": (["--trials", "0"], "--trials must be at least 1"),
    "output inside a file": (["--output", "{tmp}/taken.txt/p.yaml"], "is a file, not a folder"),
    "report inside a file": (["--report", "{tmp}/taken.txt/r"], "is a file, not a folder"),
    "unwritable output": (["--output", "/proc/bam/p.yaml"], "/proc is not writable"),
    "unknown model": (["--models", "m9"], "invalid choice: 'm9'"),
    "absurd fixed value": (["--set", "kt=1e30"], "kt"),
    "unknown fixed name": (["--set", "kq=1"], "'kq' is not a parameter"),
}


@pytest.mark.parametrize("case", FIT_CASES)
def test_fit_refuses_bad_input_before_working(case, bag, tmp_path, capsys):
    extra, message = FIT_CASES[case]
    (tmp_path / "taken.txt").write_text("keep me")
    before = snapshot(tmp_path)
    args = ["--bags", str(bag), "--models", "m1", "--trials", "4", "--quiet",
            "--output", str(tmp_path / "p.yaml"), "--report", str(tmp_path / "r")]
    args += [a.replace("{tmp}", str(tmp_path)) for a in extra]
    try:
        code = fit_main(args)
    except SystemExit as exit_:  # argparse's own refusals
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and err.strip().count("\n") == 0, err
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before


def test_eval_and_recover_refuse_unwritable_outputs(bag, tmp_path, capsys):
    params = save(published("mx64", "m1"), tmp_path / "m1.yaml")
    code = eval_main(["--params", str(params), "--bags", str(bag), "--json",
                      "/proc/bam/scores.json"])
    err = capsys.readouterr().err
    assert code == 2 and "/proc is not writable" in err and err.count("\n") == 1
    code = recover_main([str(bag), "--output", str(params / "x")])
    err = capsys.readouterr().err
    assert code == 2 and "is a file, not a folder" in err and err.count("\n") == 1


def test_a_protocol_of_1e8_repetitions_is_refused_with_its_size():
    with pytest.raises(BamError, match=r"holds 200000000 runs, more than 100000"):
        parse_protocol({"trajectories": ["steps"], "gains": [8, 16],
                        "repetitions": 10**8})
