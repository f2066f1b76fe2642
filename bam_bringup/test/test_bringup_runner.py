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
from bam_bringup.session import load_session, session_config, session_specs
from bam_sim.common.errors import BamError
from bam_sim.common.ready_line import NotReady, await_ready_line
from bam_sim.testing.ros_context import ros_domain

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 60.0  # s, for the command to start or to stop
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
])
def test_bad_arguments_are_one_line_errors(args, message, capsys):
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    lines = capsys.readouterr().err.splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("bench: error:") and message in lines[0], lines


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
    specs = {s.name: s for s in session_specs(config, Path("bag"), 1.0, 6.0, "/bench3")}
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
                                dist=SimpleNamespace(name="bam_sim"))]

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
