"""The `bench` command: help, one-line errors, clean stops, its node table and its config.

The command runs in a child process on a ROS domain of its own; the tests
wait on its output lines and its exit, with timeouts.
"""

from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bam_bringup import process_bench
from bam_bringup.process_bench import node_class
from bam_bringup.runner import main
from bam_bringup.session import load_session, session_bench, session_config, session_specs
from bam_sim.common.errors import BamError
from bam_sim.common.ready_line import NotReady, await_ready_line
from bam_sim.models.model_registry import get_model
from bam_sim.models.servo.actuators import get_actuator
from bam_testing.ros_context import ros_domain

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 60.0  # s, for the command to start or to stop
MX64 = get_actuator("mx64")


def _sensor(config: dict):
    """The session's sensor, as the session parses it (for its own actuator)."""
    from bam_bringup.bench_sensor import parse_sensor

    return parse_sensor(config, "test", session_bench(config)[0])
CODE = "import sys; from bam_bringup.runner import main; sys.exit(main(sys.argv[1:]))"


def bench(*args: str, **kwargs) -> subprocess.Popen:
    """`bench ARGS` in a child process on a private domain, stdout and stderr merged."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain(1)),
           "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    return subprocess.Popen([sys.executable, "-c", CODE, *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)


def wait_line(process: subprocess.Popen, text: str) -> str:
    """The first output line of ``process`` holding ``text`` (others skipped)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        line = await_ready_line(process, "", max(deadline - time.monotonic(), 0.001))
        if text in line:
            return line


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"], ["session", "--help"]])
def test_help(args, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("usage: bench")


def test_serve_help_lists_the_arguments_of_both_launch_files(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    output = capsys.readouterr().out
    assert "real_time_factor:=1.0" in output and "joint_names:=" in output
    assert "namespace:=" in output


@pytest.mark.parametrize(("args", "message"), [
    (["serve", "mass:=heavy"], "argument mass:=heavy must be a number"),
    (["serve", "colour:=red"], "unknown bench argument colour"),
    (["serve", "mass=1"], "write launch arguments as name:=value"),
    (["serve", "namespace:=1x"], "namespace:=1x is not a ROS namespace"),
    (["serve", "--config", "scara"], "unknown configuration scara"),
    (["serve", "--config", "arm", "sim:=false", "arm:=scara"], "arm:=dynamixel"),
    (["serve", "sim:=false", "driver:=erob", "actuator:=mx64"], "driver:=erob drives eRob"),
    (["serve", "sim:=false", "driver:=erob", "actuator:=erob80_50", "hardware:=emulated"],
     "needs interface:=NAME"),
    (["serve", "--colour"], "unrecognized arguments: --colour"),
    (["session", "--config", "/nonexistent/session.yaml"], "cannot read session"),
    (["session", "--namespace", "a b"], "namespace:=a b is not a ROS namespace"),
    (["session", "--ideal=yes"], "ignored explicit argument 'yes'"),
])
def test_bad_arguments_are_one_line_errors(args, message, capsys):
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(("bench: error:", "bench session: error:")), lines
    assert message in lines[0], lines


def test_the_command_exits_with_its_codes():
    for args, code in ((["--help"], 0), (["serve", "mass:=heavy"], 2)):
        process = bench(*args)
        process.communicate(timeout=TIMEOUT)
        assert process.returncode == code, args


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_stops_cleanly_on_a_signal(tmp_path, signum):
    bag = tmp_path / "bag"
    process = bench("serve", "record:=true", f"bag:={bag}", "namespace:=stop_test")
    try:
        await_ready_line(process, "bench: running", TIMEOUT)
        process.send_signal(signum)
        output, _ = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert process.returncode == 128 + signum, output
    assert output.rstrip().endswith("bench: stopped"), output
    assert (bag / "metadata.yaml").is_file()  # the recorder closed its bag


def test_session_stops_cleanly_on_sigterm(tmp_path):
    config = tmp_path / "session.yaml"
    config.write_text("session:\n  real_time_factor: 1.0\n  setups: [{mass: 1.0, length: 0.15}]\n"
                      "  protocol: {trajectories: [slow_oscillations], gains: [8], "
                      "duration: 30.0}\n")
    process = bench("session", "--config", str(config), "--output-dir", str(tmp_path / "out"),
                    "--quiet")
    try:
        wait_line(process, "first message on")  # the session's bag is being recorded
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, output
    (bag,) = (tmp_path / "out").glob("*/bag")
    # the one thing written, named: the bag, closed
    assert output.rstrip().endswith(f"bench: interrupted by SIGTERM; written: {bag}"), output
    assert (bag / "metadata.yaml").is_file()  # the recorder closed its bag


def test_the_session_config_is_found_through_the_ament_index(tmp_path, monkeypatch):
    from ament_index_python.packages import get_package_share_directory

    installed = Path(get_package_share_directory("bam_bringup")) / "config" / "session.yaml"
    assert session_config() == installed
    assert load_session(session_config())["actuator"]
    # An installed copy elsewhere (a non-symlink install) is the one found.
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages" / "bam_bringup").touch()
    (tmp_path / "share" / "bam_bringup" / "config").mkdir(parents=True)
    copy = tmp_path / "share" / "bam_bringup" / "config" / "session.yaml"
    copy.write_text("session: {actuator: mx106, protocol: {trajectories: [steps], "
                    "gains: [8]}}\n")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    assert session_config() == copy
    assert load_session(session_config())["actuator"] == "mx106"


def test_the_session_bench_runs_in_its_namespace():
    config = load_session(session_config())
    specs = {s.name: s for s in session_specs(config, _sensor(config), Path("bag"), 1.0, 6.0,
                                              "/bench3")}
    assert set(specs) == {"pendulum", "trajectory", "recorder"}
    assert {s.namespace for s in specs.values()} == {"/bench3"}
    assert specs["pendulum"].parameters["rate"] == float(config["rate"])
    assert specs["trajectory"].parameters["duration"] == 6.0


def test_the_node_table_comes_from_the_entry_points(monkeypatch):
    from bam_identify.nodes.trajectory_node import TrajectoryNode
    from bam_sim.nodes.pendulum_node import PendulumNode

    assert node_class("bam_sim", "pendulum") is PendulumNode
    with pytest.raises(BamError, match="no executable nope in package bam_sim"):
        node_class("bam_sim", "nope")
    with pytest.raises(BamError, match="defines 0 node classes"):
        node_class("bam_identify", "fit")  # a command, not a node
    # Another entry point for bam_sim's pendulum: the runner follows it.
    real = importlib.metadata.entry_points

    def entry_points(**kwargs):
        if kwargs.get("name") != "pendulum":
            return real(**kwargs)
        (entry,) = real(group="console_scripts", name="trajectory")
        return [SimpleNamespace(name="pendulum", value=entry.value, module=entry.module,
                                attr=entry.attr, dist=SimpleNamespace(name="bam_sim"))]

    process_bench.node_class.cache_clear()
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    try:
        assert node_class("bam_sim", "pendulum") is TrajectoryNode
    finally:
        process_bench.node_class.cache_clear()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_on_the_emulator_turns_torque_off_and_ends_the_emulator(tmp_path, signum):
    """sim:=false hardware:=emulated, stopped by a signal: the driver turns the torque off
    and reads it back, the emulator (a child process) ends and removes its port."""
    port = tmp_path / "ttyDXL"
    process = bench("serve", "sim:=false", "hardware:=emulated", f"port:={port}",
                    "namespace:=emulated_stop")
    try:
        wait_line(process, "connected to ids [1]")
        assert port.is_symlink()
        process.send_signal(signum)
        output, _ = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert process.returncode == 128 + signum, output
    assert "torque off on every servo" in output, output
    assert not os.path.lexists(port), "the emulator did not end"


def test_serve_erob_on_the_ethercat_emulator_turns_torque_off_and_ends_the_emulator():
    """sim:=false driver:=erob hardware:=emulated: the runner starts the EtherCAT emulator
    (a veth pair named by interface:=), the eRob driver brings its drive to OP; SIGTERM
    turns the torque off, read back, and the emulator ends, removing its veth pair."""
    interface = f"bamrun{os.getpid() % 100000}"
    process = bench("serve", "sim:=false", "driver:=erob", "actuator:=erob80_100",
                    "hardware:=emulated", f"interface:={interface}", "mass:=3.1",
                    "length:=0.5", "namespace:=erob_stop")
    try:
        try:
            line = wait_line(process, f"EtherCAT line on {interface}")
        except NotReady:  # the command ended before its driver came up: say why
            output, _ = process.communicate(timeout=TIMEOUT)
            reason = [text for text in output.splitlines() if "network namespace" in text]
            if reason:
                pytest.skip(f"EtherCAT emulator unavailable: {reason[0]}")
            raise AssertionError(output) from None
        assert "1 slave(s)" in line and "OP" in line, line
        assert os.path.exists(f"/sys/class/net/{interface}")
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=TIMEOUT)
    finally:
        process.kill()
    assert process.returncode == 128 + signal.SIGTERM, output
    assert "torque off on every drive" in output, output
    assert not os.path.exists(f"/sys/class/net/{interface}"), "the emulator did not end"


STEPS = "session: {protocol: {trajectories: [steps], gains: [8]}"  # a session, left open


@pytest.mark.parametrize(("text", "message"), [
    ("session: {actuator: mx64, protcol: {}}", "unknown key 'protcol'; did you mean 'protocol'"),
    ("session: {setups: [{mass: -1.0, length: 0.15}], protocol: {trajectories: [steps], "
     "gains: [8]}}", "mass"),
    ("session: {real_time_factor: fast, protocol: {trajectories: [steps], gains: [8]}}",
     "real_time_factor must be a number"),
    ("session: {protocol: {trajectories: [steps], gains: [8]}, fit: {trials: 0}}",
     "fit.trials must be"),
    ("session: {protocol: {trajectories: [steps], gains: [8]}, fit: {models: [m9]}}",
     "unknown friction model 'm9'"),
    ("session: {protocol: {trajectories: [steps], gains: [8]}, fit: {trails: 10}}",
     "unknown key 'trails'; did you mean 'trials'"),
    (f"{STEPS}, sensor: {{quantization: fine}}}}", "sensor.quantization must be 'encoder'"),
    (f"{STEPS}, sensor: {{quantization: -0.001}}}}", "sensor.quantization (rad) must be"),
    (f"{STEPS}, sensor: {{position_noise: -1}}}}", "sensor.position_noise (rad) must be"),
    (f"{STEPS}, rate: 200, sensor: {{latency: 0.003}}}}",
     "sensor.latency 0.003 s is not a whole number of ticks at rate 200 Hz; give a multiple "
     "of 0.005 s"),
    (f"{STEPS}, sensor: {{supply_resistance: lots}}}}", "sensor.supply_resistance (Ω) must be"),
    (f"{STEPS}, sensor: {{seed: 1.5}}}}", "sensor.seed must be a whole number"),
    (f"{STEPS}, sensor: {{seed: -1}}}}", "sensor.seed must be"),
    (f"{STEPS}, sensor: {{noise: 0.1}}}}", "unknown sensor key 'noise'"),
    (f"{STEPS}, sensor: loud}}", "sensor must be a mapping"),
])
def test_a_bad_session_is_refused_before_recording(tmp_path, text, message):
    """One line, exit 2, and nothing recorded: the output folder stays empty."""
    config = tmp_path / "session.yaml"
    config.write_text(text + "\n")
    out = tmp_path / "out"
    out.mkdir()
    process = bench("session", "--config", str(config), "--output-dir", str(out), "--quiet")
    output, _ = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 2, output
    assert message in output and output.strip().count("\n") == 0, output
    assert not any(out.iterdir())


def test_session_output_dir_that_cannot_be_written(tmp_path):
    (tmp_path / "file").write_text("keep me")
    process = bench("session", "--output-dir", str(tmp_path / "file" / "out"), "--quiet")
    output, _ = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 2 and "is a file, not a folder" in output, output
    assert (tmp_path / "file").read_text() == "keep me"


# -- the session's sensor and its truth table ------------------------------------------------

# A short session: one setup, one run, two models on a small budget (the fit's numbers do not
# matter here, only that every identified parameter is reported against the truth).
SHORT_SESSION = """session:
  rate: 200.0
  real_time_factor: 5.0
  setups: [{mass: 1.0, length: 0.15}]
  protocol: {trajectories: [lift_drop], gains: [32], duration: 2.0, settle: 0.5}
  fit: {models: [m1, m4], trials: 30, validation_fraction: 0.0}
"""


@pytest.fixture(scope="module")
def sensed_session(tmp_path_factory):
    """The short session with the default sensor, its progress bar on (not --quiet)."""
    root = tmp_path_factory.mktemp("sensed")
    (root / "session.yaml").write_text(SHORT_SESSION)
    process = bench("session", "--config", str(root / "session.yaml"), "--output-dir",
                    str(root / "out"))
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output
    (folder,) = (root / "out").iterdir()
    return SimpleNamespace(output=output, folder=folder,
                           config=load_session(root / "session.yaml"))


def _truth_table(report: str) -> dict[str, dict[str, str]]:
    """report.md's truth table read back: parameter -> column -> cell."""
    lines = report[report.index("## Truth of the simulated bench"):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| parameter | truth |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def test_the_session_report_holds_the_truth_table(sensed_session):
    import math
    import re

    from bam_bringup.bench_sensor import fit_groups, truth_values
    from bam_identify.fitting.space import SearchSpace
    from bam_identify.fitting.truth_report import NEGLIGIBLE, NOT_COMPARED
    from bam_sim.models.files.parameter_file import load

    folder, config = sensed_session.folder, sensed_session.config
    sensor = _sensor(config)
    truth = truth_values(load(folder / "truth.yaml"), sensor)
    assert truth["supply.resistance"] == 0.25 and truth["latency.command"] == 0.005
    report = (folder / "report" / "report.md").read_text()
    table = _truth_table(report)
    for model in ("m1", "m4"):
        bounds = SearchSpace.from_names("mx64", model, groups=fit_groups(sensor, MX64)).bounds
        for name, (lo, hi) in bounds.items():
            if name in NOT_COMPARED or abs(truth[name]) <= NEGLIGIBLE * (hi - lo):
                continue
            cell = table[name][model]
            error = re.fullmatch(r"(\S+) \(([+-][0-9.]+) %\)", cell)
            assert error and math.isfinite(float(error.group(2))), (name, model, cell)
            assert float(table[name]["truth"]) == pytest.approx(truth[name], rel=1e-5)
    # The settings and every seed, for provenance.
    for text in ("4096 counts/turn", "0.0005 rad", "5 ms (1 tick(s) at 200 Hz)",
                 "R_s = 0.25 Ω", "| noise seed | 1 |", "| fit seed (CMA-ES, validation "
                 "split) | 0 |"):
        assert text in report, text


def test_the_recorded_positions_are_whole_encoder_counts(sensed_session):
    import numpy as np

    from bam_drivers.encoder import encoder_step
    from bam_identify.data.bag_reader import read_bag

    step = encoder_step(MX64)
    (log,) = read_bag(sensed_session.folder / "bag", dt=0.005)
    counts = np.asarray(log.position) / step
    assert np.abs(counts - np.round(counts)).max() < 1e-6
    # The step is what the recording shows: its smallest move is one count.
    moves = np.abs(np.diff(np.round(counts)))
    assert moves[moves > 0].min() == 1.0


def test_the_progress_bar_stays_one_line(sensed_session):
    """The nodes log while the bar runs: into the session's log file, not through the bar."""
    bar_lines = [line for line in sensed_session.output.splitlines() if "bench session:" in line]
    assert bar_lines
    assert not [line for line in bar_lines if "[INFO]" in line or "[WARN]" in line], bar_lines
    log = (sensed_session.folder / "session.log").read_text()
    assert "[trajectory]: trial 1 (lift_drop, kp=32" in log
    assert "trial 1 (lift_drop" not in sensed_session.output


def _readings(config: dict, ticks: int = 2000) -> list[float]:
    """The positions the session's pendulum reports over ``ticks``, arm held down at rest."""
    from bam_bringup.bench_sensor import truth_set
    from bam_sim.bench.geometry import Bench
    from bam_sim.bench.stepper import BenchStepper

    sensor = _sensor(config)
    parameters = {s.name: s.parameters for s in session_specs(config, sensor, Path("bag"), 1.0,
                                                              6.0)}
    p, rate = parameters["pendulum"], float(config["rate"])
    sim = BenchStepper(truth_set(*session_bench(config), sensor),
                       Bench(mass=1.0, length=0.15), 1.0 / rate,
                       quantization=p["quantization"], position_noise=p["position_noise"],
                       latency=round(p["latency"] * rate), seed=p["seed"])
    return [sim.tick().position for _ in range(ticks)]


def test_the_sensor_noise_is_seeded_and_sized():
    import numpy as np

    from bam_drivers.encoder import encoder_step

    config = load_session(session_config())
    first, again = _readings(config), _readings(config)
    assert first == again  # same seed, same readings
    other = {**config, "sensor": {**config["sensor"], "seed": config["sensor"]["seed"] + 1}}
    assert _readings(other) != first
    # At rest at 0 the reading is off by a count where |noise| > step/2: for the shipped
    # std of 5e-4 rad and the MX-64's 2π/4096 step that is p = P(|z| > 1.534) = 0.125 of the
    # 2000 readings, 250 ± 15 (binomial sd); the band is ± 6.7 sd.
    counts = np.round(np.asarray(first) / encoder_step(MX64))
    assert set(np.unique(counts)) <= {-1.0, 0.0, 1.0}
    assert 150 <= np.count_nonzero(counts) <= 350


def test_ideal_gives_the_noiseless_bench():
    from bam_bringup.bench_sensor import fit_groups, ideal_session, truth_set

    config = ideal_session(load_session(session_config()))
    sensor = _sensor(config)
    assert sensor.ideal and fit_groups(sensor, MX64) == ()
    assert truth_set(MX64, get_model("m4"), sensor).groups == ()
    pendulum = {s.name: s.parameters for s in session_specs(config, sensor, Path("b"), 1.0, 6.0)}
    assert {pendulum["pendulum"][k] for k in ("quantization", "position_noise", "latency")} \
        == {0.0}
    assert set(_readings(config, 50)) == {0.0}  # arm at rest at 0: read exactly
