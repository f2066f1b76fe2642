"""``bench session``: record the simulated bench over a session, then fit and report.

The session (config/session.yaml, found through the ament index) names the
simulated actuator, the bench setups and the protocol: for each setup the
runner plays the protocol through the ``bam/run_trajectory`` action of the
trajectory node, the recorder writes everything into one rosbag2 bag, then the
models are fitted to the bag and the report is written, with the truth the bench
ran beside the fit. The bench models the actuator's sensor (the session's
``sensor``, :mod:`bam_bringup.bench_sensor`; ``--ideal`` turns it off). While the
progress bar shows, the nodes log to ``session.log`` in the session's folder
(:mod:`bam_bringup.session_logs`).
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import shutil
import sys
import threading
import time
from pathlib import Path

import yaml

from bam_bringup import bench_sensor
from bam_bringup.bench_sensor import Sensor
from bam_bringup.launch_standin.launch_file import LaunchFile
from bam_bringup.node_spec import NodeSpec
from bam_bringup.process_bench import ProcessBench
from bam_bringup.session_logs import logs_to_file
from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.errors import BamError, one_line
from bam_sim.common.numbers import number
from bam_sim.common.output_paths import check_kind, check_output, writing
from bam_sim.common.share import share_file
from bam_sim.models.model_registry import FrictionModel, get_model
from bam_sim.models.servo.actuator import Actuator
from bam_sim.models.servo.actuators import get_actuator

SOURCE_ROOT = Path(__file__).resolve().parent.parent  # the package's source folder
BENCH = LaunchFile("bench")  # the session records the simulated bench of bench.launch.py


def session_config() -> Path:
    """config/session.yaml of the installed package (else of the source tree)."""
    return share_file("bam_bringup", "config", "session.yaml", source_root=SOURCE_ROOT)


def load_session(path: Path) -> dict:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BamError(f"cannot read session {path}: {one_line(str(exc).splitlines()[0])}") \
            from None
    if not isinstance(doc, dict) or not isinstance(doc.get("session"), dict):
        raise BamError(f"{path} must hold a 'session' mapping")
    return check_session(doc["session"], str(path))


SESSION_KEYS = ("actuator", "truth_model", "rate", "real_time_factor", "arm_mass", "setups",
                "protocol", "fit", "sensor")
FIT_KEYS = ("models", "trials", "seed", "validation_fraction")


def _known_keys(mapping: dict, known: tuple[str, ...], where: str) -> None:
    for key in mapping:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise BamError(f"{where}: unknown key '{key}'; {hint}known keys: {', '.join(known)}")


def session_bench(config: dict) -> tuple[Actuator, FrictionModel]:
    """The actuator and the truth model the session names, resolved (a BamError of one line
    naming the valid choices): what the rest of the session is given."""
    actuator = get_actuator(config.get("actuator", "mx64"))
    return actuator, get_model(config.get("truth_model", "m4"))


def check_session(config: dict, where: str) -> dict:
    """The session ``config`` checked before anything is recorded (BamError, one line)."""
    from bam_identify.protocol import parse_protocol
    from bam_sim.bench.geometry import Bench

    where = f"session {where}"
    _known_keys(config, SESSION_KEYS, where)
    actuator, truth_model = session_bench(config)
    number(config.get("rate", 1000.0), f"{where}: rate", low=1.0, high=1.0e5)
    number(config.get("real_time_factor", 1.0), f"{where}: real_time_factor", low=0.0,
           high=1.0e5)
    arm_mass = config.get("arm_mass", 0.0)
    setups = config.get("setups") or [{"mass": 1.0, "length": 0.15}]
    if not isinstance(setups, list):
        raise BamError(f"{where}: setups must be a list of {{mass, length}}, got {setups!r}")
    for setup in setups:
        if not isinstance(setup, dict) or set(setup) != {"mass", "length"}:
            raise BamError(f"{where}: each setup is {{mass: kg, length: m}}, got {setup!r}")
        Bench(mass=setup["mass"], length=setup["length"], arm_mass=arm_mass)
    parse_protocol(config.get("protocol", {}), f"{where}: protocol")
    fit = config.get("fit", {})
    if not isinstance(fit, dict):
        raise BamError(f"{where}: fit must be a mapping of {', '.join(FIT_KEYS)}")
    _known_keys(fit, FIT_KEYS, f"{where}: fit")
    sensor = bench_sensor.parse_sensor(config, where, actuator)
    # The truth composes with the sensor's supply sag (and is published) before recording.
    bench_sensor.truth_set(actuator, truth_model, sensor)
    return config


def _wait(future, timeout: float, cancel: Cancellation):
    """The future's result; Cancelled as soon as ``cancel`` is requested."""
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    deadline = time.monotonic() + timeout
    while not done.wait(0.1):
        cancel.check()
        if time.monotonic() > deadline:
            raise BamError(f"no answer from the bench within {timeout:.0f} s")
    return future.result()


def _play(client, trajectory: str, gain: float, repetition: int, timeout: float,
          cancel: Cancellation) -> None:
    from bam_msgs.action import RunTrajectory

    goal = RunTrajectory.Goal(trajectory=trajectory, gain=gain, repetition=repetition)
    handle = _wait(client.send_goal_async(goal), timeout, cancel)
    if not handle.accepted:
        raise BamError(f"the bench refused to play {trajectory} at kp={gain:g}")
    result = _wait(handle.get_result_async(), timeout, cancel).result
    if not result.success:
        raise BamError(f"{trajectory} at kp={gain:g} failed: {result.message}")


def session_specs(config: dict, sensor: Sensor, bag: Path, settle: float, duration: float,
                  bench_namespace: str = "", truth_file: Path | None = None) -> list[NodeSpec]:
    """The simulated bench of a session: recording to ``bag``, at the session's rate,
    ``sensor`` (the session's, parsed) modelled; ``truth_file``: the parameter file the
    pendulum runs (else the published set of the truth model)."""
    first = (config.get("setups") or [{"mass": 1.0, "length": 0.15}])[0]
    specs = BENCH.compose({
        "actuator": config.get("actuator", "mx64"), "model": config.get("truth_model", "m4"),
        "sim": True, "record": True, "bag": str(bag),
        "real_time_factor": float(config.get("real_time_factor", 1)),
        "mass": float(first["mass"]), "length": float(first["length"]),
        "arm_mass": float(config.get("arm_mass", 0.0)), "namespace": bench_namespace})
    pendulum = {"rate": float(config.get("rate", 1000.0)),
                **bench_sensor.pendulum_parameters(sensor, truth_file)}
    extra = {"pendulum": pendulum,
             "trajectory": {"duration": duration, "settle": settle}}
    return [dataclasses.replace(s, parameters={**s.parameters, **extra.get(s.name, {})})
            for s in specs]


def run_session(config: dict, output_dir: Path, quiet: bool = False,
                bench_namespace: str = "", cancel: Cancellation | None = None) -> str:
    """Record the simulated bench over the session's setups, then fit and report;
    ``cancel`` ends it at the next step, naming what was written (Cancelled)."""
    from bam_identify.protocol import parse_protocol
    from bam_sim.models.files.parameter_file import dump_yaml

    cancel = cancel or Cancellation()
    check_kind(output_dir, "--output-dir", folder=True)  # a device, a pipe: refused
    folder = output_dir / datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    if folder.exists():
        raise BamError(f"{folder} already exists; wait a second or choose --output-dir")
    check_output(folder, "--output-dir", force=None, folder=True)
    protocol = parse_protocol(config.get("protocol", {}), "session protocol")
    duration = protocol.duration or 6.0
    settle = protocol.settle if protocol.settle is not None else 1.0
    bag, truth_file = folder / "bag", folder / "truth.yaml"
    actuator, truth_model = session_bench(config)
    sensor = bench_sensor.parse_sensor(config, "session", actuator)
    truth = bench_sensor.truth_set(actuator, truth_model, sensor)
    specs = session_specs(config, sensor, bag, settle, duration, bench_namespace, truth_file)
    job = _fit_job(config, bag, folder, quiet, bench_sensor.fit_groups(sensor, actuator))
    try:  # a bad fit request failed above, before recording
        with writing(folder, "--output-dir"):
            folder.mkdir(parents=True)
            truth_file.write_text(dump_yaml(truth), encoding="utf-8")
    except (OSError, BamError) as exc:
        shutil.rmtree(folder, ignore_errors=True)  # it was new: only what this made
        if isinstance(exc, BamError):
            raise
        raise BamError(f"cannot write {folder} ({exc.strerror}); choose a writable "
                       "--output-dir") from None
    # A bar on the terminal: the nodes' logs go to the session's log file meanwhile.
    log = None if quiet else folder / "session.log"
    start = time.monotonic()
    try:
        recorded = _record(specs, config, protocol, duration, quiet, cancel, log)
    except Cancelled:  # the recorder had opened its bag: closed with the bench, it is kept
        raise Cancelled(f"recorded: {bag}", [bag]) from None
    seconds = time.monotonic() - start
    try:
        outcome = _fit(job, cancel)
    except Cancelled as exc:  # the bag is closed too: the message names all that was written
        raise Cancelled(f"recorded: {bag}\n{exc}", [bag, *exc.written]) from None
    with writing(outcome.report or folder, "the report"):
        _report_truth(outcome, sensor, truth, job)
    runs = len(config.get("setups") or [None]) * len(protocol)
    counts = ", ".join(f"{k} {v}" for k, v in recorded.items()) if recorded else "?"
    logged = f"  node logs: {log}\n" if log is not None else ""
    return (f"recorded {runs} runs in {seconds:.0f} s ({_bench_label(sensor)}): {bag}\n"
            f"  messages: {counts}\n{logged}  truth: {truth_file}\n{outcome.summary}")


def _bench_label(sensor: Sensor) -> str:
    if sensor.ideal:
        return "ideal bench, no sensor effects"
    return (f"sensor: step {sensor.quantization:.3g} rad, noise {sensor.position_noise:g} "
            f"rad, latency {1e3 * sensor.latency:g} ms, supply {sensor.supply_resistance:g} "
            f"ohm, seed {sensor.seed}")


def _report_truth(outcome, sensor: Sensor, truth, job) -> None:
    """The truth table beside the fit: report.md's section, summary.json's "truth"."""
    from bam_identify.fitting.space import SearchSpace
    from bam_identify.fitting.truth_report import append_truth, errors, truth_markdown

    if outcome.report is None:
        return
    identified = {r.model: SearchSpace.build(r.params.actuator, r.params.model,
                                             groups=job.groups).bounds
                  for r in outcome.results}
    values = bench_sensor.truth_values(truth, sensor)
    settings = bench_sensor.sensor_rows(sensor, truth.actuator, job.seed)
    section = truth_markdown(values, truth.model.name, outcome.results, identified, settings)
    record = {"model": truth.model.name, "values": values, "settings": dict(settings),
              "seeds": {"noise": sensor.seed, "fit": job.seed},
              "error_percent": errors(values, outcome.results, identified)}
    append_truth(outcome.report, section, record)


def _record(specs: list[NodeSpec], config: dict, protocol, duration: float,
            quiet: bool, cancel: Cancellation, log: Path | None = None) -> dict:
    """Play the protocol on every setup; the recorder's message counts once its bag closed."""
    import rclpy
    from rclpy.action import ActionClient

    from bam_msgs.action import RunTrajectory
    from bam_sim.common.contract import RUN_TRAJECTORY_ACTION

    bench = ProcessBench(specs)
    client = None
    try:
        pendulum = bench.nodes["pendulum"]
        client_node = rclpy.create_node("session", context=bench.context,
                                        namespace=pendulum.get_namespace())
        bench.add(client_node)
        client = ActionClient(client_node, RunTrajectory, RUN_TRAJECTORY_ACTION)
        _await_server(client, 20.0, cancel)
        _await_recorder(bench.nodes["recorder"], 20.0, cancel)
        with logs_to_file(log) as terminal:
            _play_setups(pendulum, client, config, protocol, 60.0 + 20.0 * duration, quiet,
                         cancel, terminal)
        recorder = bench.nodes["recorder"]
        bench.close("recorder")  # writes what it still holds, then closes the bag
        return dict(getattr(recorder, "counts", {}))
    finally:
        if client is not None:  # before its node: a goal may still be in flight
            bench.close(client_node.get_name(), waitables=(client,))
        bench.shutdown()


def _play_setups(pendulum, client, config: dict, protocol, timeout: float, quiet: bool,
                 cancel: Cancellation, terminal=None) -> None:
    """Each setup of the session in turn, the whole protocol on each."""
    from rclpy.parameter import Parameter
    from tqdm import tqdm

    setups = config.get("setups") or [{"mass": 1.0, "length": 0.15}]
    with tqdm(total=len(setups) * len(protocol), desc="bench session", unit="run",
              disable=quiet, file=terminal or sys.stderr) as bar:
        for setup in setups:
            # Atomically: one bench description for the whole new setup.
            result = pendulum.set_parameters_atomically([
                Parameter("mass", value=float(setup["mass"])),
                Parameter("length", value=float(setup["length"]))])
            if not result.successful:
                raise BamError(f"bench setup {setup} refused: {result.reason}")
            for run in protocol:
                bar.set_postfix_str(f"m={setup['mass']} kg l={setup['length']} m "
                                    f"{run.trajectory} kp={run.gain:g}", refresh=False)
                _play(client, run.trajectory, run.gain, run.repetition, timeout, cancel)
                bar.update(1)


def _await_server(client, timeout: float, cancel: Cancellation) -> None:
    deadline = time.monotonic() + timeout
    while not client.wait_for_server(timeout_sec=0.1):
        cancel.check()
        if time.monotonic() > deadline:
            raise BamError("the trajectory action server did not come up")


def _await_recorder(recorder, timeout: float, cancel: Cancellation) -> None:
    """Every recorded topic matched to the recorder: a trial is recorded from its first
    sample (DDS drops what a volatile topic sends before the match)."""
    deadline = time.monotonic() + timeout
    while not recorder.matched():
        cancel.check()
        if time.monotonic() > deadline:
            raise BamError(f"the recorder did not connect to the bench's topics within "
                           f"{timeout:g} s")
        time.sleep(0.01)  # polls the match; orders nothing


def _fit_job(config: dict, bag: Path, folder: Path, quiet: bool, groups: tuple[str, ...] = ()):
    """The session's fit, as ``fit`` would run it: one typed job, checked."""
    from bam_identify.fitting.job import FitJob
    from bam_identify.fitting.plan import resolve_models

    fit = config.get("fit", {})
    models = fit.get("models", list(FitJob.models))
    if isinstance(models, str) or not all(isinstance(m, str) for m in models):
        raise BamError(f"session fit.models must be a list of model names, got {models!r}")
    resolve_models(models)  # an unknown name fails here, before recording
    return FitJob(
        bags=(bag,), models=tuple(models),
        trials=int(number(fit.get("trials", 1500), "session fit.trials", low=1, high=1e7)),
        seed=int(number(fit.get("seed", 0), "session fit.seed", low=0, high=2**32 - 1)),
        validation_fraction=number(fit.get("validation_fraction", 0.25),
                                   "session fit.validation_fraction", low=0.0, high=1.0,
                                   high_open=True),
        output=str(folder / "params" / "{actuator}_{model}.yaml"),
        report=folder / "report", quiet=quiet, groups=groups)


def _fit(job, cancel: Cancellation):
    """The fit's outcome (its results, report and summary)."""
    from bam_identify.fitting.run import fit

    return fit(job, cancel)
