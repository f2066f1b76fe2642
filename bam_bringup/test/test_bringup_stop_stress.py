"""Every long-running executable, stopped STOPS times after real traffic (issue #23).

Each executable runs as installed (its console script), in a session of its own, several
instances at once in namespaces of one private DDS domain, while one other core spins.
After the instances have exchanged messages with the test (or reached the phase a stop
must survive: numba compiling, the Levenberg-Marquardt polish, a campaign job), they are
stopped by SIGTERM, SIGINT, SIGTERM+SIGTERM or SIGINT+SIGTERM in turn
(bam_sim.testing.stop_stress): each must exit within 5 s with 128 + the first signal,
print no traceback and leave no process behind; a bag it wrote must read back, and a
driver must have turned the torque off as its emulator reads it.

Marked ``stress``: CI decides where it runs. BAM_STOP_STRESS_STOPS (default 20) sets the
stops per executable.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bam_sim.testing import stop_stress as ss
from bam_sim.testing.ros_context import private_context, ros_domain

pytestmark = pytest.mark.stress

STOPS = int(os.environ.get("BAM_STOP_STRESS_STOPS", "20"))
DOMAIN = ros_domain(4)  # one domain for every round; namespaces keep the instances apart


def script(package: str, executable: str) -> str:
    """The installed console script of ``executable``, as ``ros2 run`` finds it."""
    from ament_index_python.packages import get_package_prefix

    return str(Path(get_package_prefix(package)) / "lib" / package / executable)


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "ROS_DOMAIN_ID": str(DOMAIN), "PYTHONUNBUFFERED": "1",
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", **extra}


@dataclass
class Scenario:
    """How to start one instance, bring it to the moment of its stop, and check after."""

    name: str
    batch: int  # instances started and stopped at once
    start: Callable[[int, Path, tuple], ss.Started]
    ready: Callable[[ss.Started, ss.TrafficProbe], None]
    check: Callable[[ss.Started], list[str]] = lambda started: []
    slot: Callable[[int], object] | None = None  # a resource per slot (an emulator), kept
    # over the rounds: the i-th instance runs on slot i % batch
    warm: Callable[[Path], None] | None = None  # run once before the rounds (compile_first)

    def __str__(self) -> str:
        return self.name


def ros_args(namespace: str, **params: object) -> list[str]:
    args = ["--ros-args", "-r", f"__ns:={namespace}"]
    for name, value in params.items():
        args += ["-p", f"{name}:={value}"]
    return args


def namespace_of(started: ss.Started) -> str:
    return started.data["namespace"]


def node_start(package: str, executable: str, **params: object) -> Callable:
    """A ROS node executable in its own namespace."""

    def start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
        namespace = f"/stress_{executable}_{i}"
        started = ss.start(executable, [script(package, executable),
                                        *ros_args(namespace, **params)],
                           tmp / f"{executable}_{i}.log", signals, environment())
        started.data["namespace"] = namespace
        return started
    return start


def drive(started: ss.Started, probe: ss.TrafficProbe) -> None:
    probe.drive(namespace_of(started))


# -- the recorder and the trajectory node -------------------------------------------------------

def recorder_start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
    started = node_start("bam_identify", "recorder", output=tmp / f"recorder_{i}")(
        i, tmp, signals)
    started.data["bag"] = tmp / f"recorder_{i}"
    return started


def recorder_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    """Joint states published into its namespace until it says it records them."""
    from sensor_msgs.msg import JointState

    from bam_sim.common import contract
    from bam_sim.common.qos import profile

    topic = f"{namespace_of(started)}/{contract.JOINT_STATES.name}"
    publisher = probe.node.create_publisher(JointState, topic,
                                            profile(contract.JOINT_STATES.qos))
    ss.until(lambda: publisher.get_subscription_count() > 0, f"the recorder on {topic}")
    state = JointState(name=["pendulum"], position=[0.1], velocity=[0.0], effort=[0.0])
    started.wait_output(f"first message on {topic}", resend=lambda: publisher.publish(state))


def bag_problems(bag: Path) -> list[str]:
    """What makes ``bag`` unreadable by the project's bag reader. A bag closed in the middle
    of a trial may hold no complete run: the reader's refusal to make logs of it is not a
    problem, its failing to open or decode the bag is."""
    from bam_identify.data.bag_reader import read_bag
    from bam_sim.common.errors import BamError

    try:
        read_bag(bag)
    except BamError as exc:
        message = str(exc)
        unreadable = ("does not exist", "was not closed", "is not a rosbag2 bag",
                      "cannot read bag", "has type")
        if any(text in message for text in unreadable):
            return [f"bag unreadable: {message}"]
    return []


def recorder_check(started: ss.Started) -> list[str]:
    problems = bag_problems(started.data["bag"])
    if "closed bag" not in started.output():
        problems.append("no 'closed bag' line")
    return problems


def trajectory_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    """A RunTrajectory goal sent; its commands received."""
    from rclpy.action import ActionClient

    from bam_msgs.action import RunTrajectory
    from bam_msgs.msg import ActuatorCommand
    from bam_sim.common import contract
    from bam_sim.common.qos import profile

    namespace = namespace_of(started)
    commands = probe.received(ActuatorCommand, f"{namespace}/{contract.COMMANDS.name}",
                              profile(contract.COMMANDS.qos))
    client = ActionClient(probe.node, RunTrajectory,
                          f"{namespace}/{contract.RUN_TRAJECTORY_ACTION}")
    ss.until(client.server_is_ready, f"the trajectory action server in {namespace}")
    ss.until(lambda: probe.node.count_publishers(f"{namespace}/{contract.COMMANDS.name}"),
             "the trajectory node's command publisher")
    client.send_goal_async(RunTrajectory.Goal(trajectory="slow_oscillations", gain=8.0))
    ss.until(lambda: len(commands) >= 5, f"commands of a run in {namespace}")


# -- the drivers against their emulators ----------------------------------------------------------

SERIAL = {  # emulator options and driver parameters per serial driver
    "dynamixel": (dict(protocol=1, servo_model="mx64_p1"), {}),
    "feetech": (dict(protocol=1, servo_model="sts3215", physics="sts3215:m1", mass=0.35),
                dict(mass=0.35)),
}


def serial_start(driver: str) -> Callable:
    def start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
        params = SERIAL[driver][1]
        started = node_start("bam_drivers", driver, port=slot.port, rate=200.0,
                             latency_timer_ms=10.0, command_timeout=0.0,
                             **params)(i, tmp, signals)
        started.data["emulator"] = slot
        return started
    return start


def serial_emulator(driver: str) -> Callable:
    """The emulator of one slot: its drivers, one after the other, run on it."""
    def make(slot: int):
        from bam_drivers.emulators.client import EmulatorProcess

        return EmulatorProcess(**SERIAL[driver][0])
    return make


def erob_start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
    started = node_start("bam_drivers", "erob", interface=slot.interface, rate=500.0,
                         frame_timeout=0.005, thread_priority=20,
                         command_timeout=0.0)(i, tmp, signals)
    started.data["emulator"] = slot
    return started


def erob_emulator(slot: int):
    from bam_drivers.emulators import ethercat_client as ec

    try:
        return ec.EthercatEmulatorProcess(priority=20,
                                          interface=f"bamst{os.getpid() % 1000}x{slot}")
    except ec.NamespaceUnavailable as exc:
        pytest.skip(f"EtherCAT emulator unavailable: {exc}")


def driver_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    """Joint states received, a position command sent, then a command turning the torque
    on, sent until the emulated servo's torque is on."""
    from bam_msgs.msg import ActuatorCommand
    from bam_sim.common import contract
    from bam_sim.common.qos import profile

    namespace = namespace_of(started)
    names = list(probe.drive(namespace)[-1].name)
    commands = probe.node.create_publisher(ActuatorCommand,
                                           f"{namespace}/{contract.COMMANDS.name}",
                                           profile(contract.COMMANDS.qos))
    ss.until(lambda: commands.get_subscription_count() > 0, f"the driver's commands in "
             f"{namespace}")
    command = ActuatorCommand(names=names, goal_positions=[0.2] * len(names),
                              torque_enables=[True] * len(names))
    emulator = started.data["emulator"]
    ss.until(lambda: emulator.truth()[1]["torque_enable"], "torque on, as the emulator reads",
             resend=lambda: commands.publish(command))


def torque_check(started: ss.Started) -> list[str]:
    truth = started.data["emulator"].truth()
    on = [joint for joint, state in truth.items() if state["torque_enable"]]
    return [f"torque still on at {on}, as the emulator reads it"] if on else []


# -- the health monitor, beside a simulated servo ---------------------------------------------

COMPILE_TIMEOUT = 300.0  # s: numba compiling a kernel cold on a loaded machine


def start_built(package: str, executable: str, namespace: str, log: Path) -> ss.Started:
    """``executable`` in ``namespace``, once it logged its first line: built, its numba
    kernels compiled (or loaded) first, however long a cold cache takes."""
    started = ss.start(executable, [script(package, executable), *ros_args(namespace)], log,
                       (signal.SIGTERM,), environment())
    try:
        started.wait_output(f"[{namespace[1:]}.{executable}]", timeout=COMPILE_TIMEOUT)
    except AssertionError:
        ss.kill_leftovers([started])
        raise
    return started


def compile_first(package: str, executable: str) -> Callable[[Path], None]:
    """A scenario's warm-up: ``executable`` started once and stopped when built, so that its
    kernels are in the numba cache. Ten instances compiling a cold cache at once, a core
    taken, outlast READY_TIMEOUT (the stress test run alone after an edit, without the
    earlier tests that warm it)."""
    def warm(tmp: Path) -> None:
        ss.stop_all([start_built(package, executable, f"/stress_warm_{executable}",
                                 tmp / f"warm_{executable}.log")])
    return warm


class PendulumSlot:
    """A simulated pendulum in a namespace of its own, kept over the rounds: the servo its
    slot's monitors shadow, one after the other."""

    def __init__(self, slot: int) -> None:
        self.log = Path(tempfile.mkstemp(prefix="stress_monitored_", suffix=".log")[1])
        self.namespace = f"/stress_monitored_{slot}"
        self.started = start_built("bam_sim", "pendulum", self.namespace, self.log)

    def stop(self) -> None:
        ss.stop_all([self.started])
        self.log.unlink(missing_ok=True)


def monitor_start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
    from bam_sim.models.files.parameter_file import published, save

    params = tmp / f"monitor_{i}.yaml"
    save(published("mx64", "m4"), params)
    # reference_mae given: a published set carries no validation MAE in its provenance
    started = ss.start("monitor", [script("bam_sim", "monitor"),
                                   *ros_args(slot.namespace, params_file=params,
                                             reference_mae=0.01)],
                       tmp / f"monitor_{i}.log", signals, environment())
    started.data["namespace"] = slot.namespace
    return started


def monitor_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    """The servo driven while the monitor shadows it: its running MAE received."""
    from sensor_msgs.msg import JointState

    from bam_sim.common import contract
    from bam_sim.common.qos import profile

    namespace = namespace_of(started)
    mae = probe.received(JointState, f"{namespace}/{contract.MONITOR_MAE.name}",
                         profile(contract.MONITOR_MAE.qos))
    ss.until(lambda: probe.node.count_publishers(f"{namespace}/{contract.MONITOR_MAE.name}"),
             f"the monitor's MAE publisher in {namespace}")
    probe.drive(namespace)
    ss.until(lambda: len(mae) >= 3, f"the monitor's running MAE in {namespace}")


# -- bench serve and bench session ----------------------------------------------------------------

def bench_serve_start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
    namespace, bag = f"stress_serve_{i}", tmp / f"serve_{i}"
    started = ss.start("bench serve", [script("bam_bringup", "bench"), "serve", "record:=true",
                                       f"bag:={bag}", f"namespace:={namespace}"],
                       tmp / f"serve_{i}.log", signals, environment())
    started.data.update(namespace=f"/{namespace}", bag=bag)
    return started


def bench_serve_check(started: ss.Started) -> list[str]:
    problems = bag_problems(started.data["bag"])
    if "bench: stopped" not in started.output():
        problems.append("no 'bench: stopped' line")
    return problems


SESSION = ("session:\n  real_time_factor: 1.0\n  setups: [{mass: 1.0, length: 0.15}]\n"
           "  protocol: {trajectories: [slow_oscillations], gains: [8], duration: 30.0}\n")


def bench_session_start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
    config, output = tmp / f"session_{i}.yaml", tmp / f"session_{i}"
    config.write_text(SESSION)
    started = ss.start("bench session", [script("bam_bringup", "bench"), "session", "--config",
                                         str(config), "--output-dir", str(output),
                                         "--namespace", f"stress_session_{i}", "--quiet"],
                       tmp / f"session_{i}.log", signals, environment())
    started.data["output"] = output
    return started


def bench_session_check(started: ss.Started) -> list[str]:
    bags = sorted(started.data["output"].glob("*/bag"))
    if len(bags) != 1:
        return [f"expected one session bag, found {bags}"]
    return bag_problems(bags[0])


# -- fit and campaign work ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def logs_dir(tmp_path_factory) -> Path:
    """Legacy logs of a simulated MX-64 (the fit's input). Their batched rollout is compiled
    here, into the numba cache the fits load: the fit scenarios other than the compiling
    one are to be stopped in their work, not in a compilation that outlasts their wait."""
    from bam_identify.data.legacy_logs import write_legacy_log
    from bam_identify.data.synthetic import paper_like_set
    from bam_sim.bench.bench_log import LogBatch
    from bam_sim.bench.rollouts import batch_errors
    from bam_sim.models.files.parameter_file import published

    truth = published("mx64", "m1")
    logs = paper_like_set(truth, 4, duration=1.5, seed=8)
    batch_errors(truth.model, truth.vector(), LogBatch.pack(logs, truth.actuator))
    folder = tmp_path_factory.mktemp("logs")
    for i, log in enumerate(logs):
        write_legacy_log(folder / f"{i}.json", log, "mx64", log.meta["trajectory"])
    return folder


# `fit` as installed, with a numba listener that says when an outermost compilation
# starts and how it ends (an exception's name: the stop landed in the compiler).
FIT_COMPILING = """
import sys
from numba.core import event

class Said(event.Listener):
    depth = 0
    def on_start(self, ev):
        self.depth += 1
        if self.depth == 1:
            print("stress: numba compiling", flush=True)
    def on_end(self, ev):
        self.depth -= 1
        if self.depth == 0:
            details = getattr(ev, "_exc_details", None)  # numba's is_failed is inverted
            print(f"stress: numba compile ended ({details[0].__name__ if details else 'ok'})",
                  flush=True)

event.register("numba:compile", Said())
from bam_identify.cli import fit_main
sys.exit(fit_main(sys.argv[1:]))
"""


def fit_args(logs: Path, tmp: Path, i: int, *extra: str) -> list[str]:
    return ["--logs", str(logs), "--models", "m1", "--trials", "1000000",
            "--output", str(tmp / f"fit_{i}" / "{model}.yaml"),
            "--report", str(tmp / f"fit_{i}" / "report"), "--quiet", *extra]


def fit_compiling_start(logs: Path) -> Callable:
    def start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
        cache = Path(tempfile.mkdtemp(prefix="numba_", dir=tmp))  # empty: numba compiles
        return ss.start("fit (numba compiling)",
                        [sys.executable, "-c", FIT_COMPILING, *fit_args(logs, tmp, i)],
                        tmp / f"fit_compiling_{i}.log", signals,
                        environment(NUMBA_CACHE_DIR=str(cache)))
    return start


def fit_compiling_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    started.wait_output("stress: numba compiling", timeout=120.0)


def fit_polish_start(logs: Path) -> Callable:
    def start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
        database = tmp / f"fit_polish_{i}.db"
        started = ss.start("fit (LM polish)",
                           [script("bam_identify", "fit"),
                            *fit_args(logs, tmp, i, "--storage", f"sqlite:///{database}")],
                           tmp / f"fit_polish_{i}.log", signals, environment())
        started.data["database"] = database
        return started
    return start


def open_polishes(database: Path) -> int:
    """Polishes claimed and not finished in the fit's study record."""
    import sqlalchemy as sa

    if not database.exists():
        return 0
    engine = sa.create_engine(f"sqlite:///{database}")
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(
                "SELECT COUNT(*) FROM bam_fit_items WHERE kind = 'lm' AND finished IS NULL"
            )).scalar()
    except sa.exc.OperationalError:  # the fit has not made its tables yet
        return 0
    finally:
        engine.dispose()


def fit_polish_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    """The fit frozen (SIGSTOP) inside its Levenberg-Marquardt polish: the record holds a
    polish claimed and not finished. stop_all sends the signal, then SIGCONT."""
    database = started.data["database"]

    def in_polish() -> bool:
        if not open_polishes(database):
            return False
        os.kill(started.process.pid, signal.SIGSTOP)
        ss.until(lambda: ss.stopped(started.process.pid), "the fit frozen", 5.0)
        if open_polishes(database):  # still inside: it cannot leave it while frozen
            return True
        os.kill(started.process.pid, signal.SIGCONT)
        return False

    started.wait(in_polish, "a polish under way", timeout=120.0)
    started.data["frozen"] = True


def campaign_start(logs: Path) -> Callable:
    def start(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
        from bam_identify.campaign_cli import campaign_main

        where = ["--storage", f"sqlite:///{tmp / f'campaign_{i}.db'}", "--campaign", "c"]
        assert campaign_main(["add", *where, *fit_args(logs, tmp, i)]) == 0
        return ss.start("campaign work", [script("bam_identify", "campaign"), "work", *where,
                                          "--quiet"],
                        tmp / f"campaign_{i}.log", signals, environment())
    return start


def campaign_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    started.wait_output("job 0: m1", timeout=120.0)


# -- the rounds -----------------------------------------------------------------------------------

def scenarios(logs: Path) -> list[Scenario]:
    return [
        Scenario("pendulum", 10, node_start("bam_sim", "pendulum"), drive,
                 warm=compile_first("bam_sim", "pendulum")),
        Scenario("arm", 10, node_start("bam_sim", "arm"), drive,
                 warm=compile_first("bam_sim", "arm")),
        Scenario("recorder", 10, recorder_start, recorder_ready, recorder_check),
        Scenario("trajectory", 10, node_start("bam_identify", "trajectory"), trajectory_ready),
        Scenario("dynamixel", 5, serial_start("dynamixel"), driver_ready, torque_check,
                 serial_emulator("dynamixel")),
        Scenario("feetech", 5, serial_start("feetech"), driver_ready, torque_check,
                 serial_emulator("feetech")),
        Scenario("erob", 5, erob_start, driver_ready, torque_check, erob_emulator),
        Scenario("monitor", 5, monitor_start, monitor_ready, slot=PendulumSlot),
        Scenario("bench serve", 5, bench_serve_start, drive, bench_serve_check,
                 warm=compile_first("bam_sim", "pendulum")),
        Scenario("bench session", 5, bench_session_start,
                 lambda s, p: s.wait_output("first message on"), bench_session_check,
                 warm=compile_first("bam_sim", "pendulum")),
        Scenario("fit (numba compiling)", 5, fit_compiling_start(logs), fit_compiling_ready),
        Scenario("fit (LM polish)", 5, fit_polish_start(logs), fit_polish_ready),
        Scenario("campaign work", 5, campaign_start(logs), campaign_ready),
    ]


def run_round(scenario: Scenario, indices: range, tmp: Path, probe: ss.TrafficProbe,
              slots: list) -> list[ss.Stop]:
    """Start the instances ``indices`` at once, bring each to its stop, stop them all."""
    started: list[ss.Started] = []

    def launch(i: int) -> None:
        slot = slots[i % scenario.batch] if slots else None
        started.append(scenario.start(i, tmp, ss.pattern(i), slot))

    def bring(s: ss.Started) -> ss.Stop | None:  # None: ready for its stop
        try:
            scenario.ready(s, probe)
        except AssertionError as exc:
            return ss.never_ready(s, str(exc))
        return None

    try:
        ss.threaded([lambda i=i: launch(i) for i in indices])
        failed = dict(zip(map(id, started), ss.threaded([lambda s=s: bring(s)
                                                          for s in started])))
        ready = [s for s in started if failed[id(s)] is None]
        stops = ss.stop_all(ready) if ready else []
        for stop, s in zip(stops, ready):
            stop.problems += scenario.check(s)
        return stops + [stop for stop in failed.values() if stop is not None]
    finally:
        ss.kill_leftovers(started)


SCENARIO_NAMES = [s.name for s in scenarios(Path())]


@pytest.fixture(scope="module")
def probe():
    with private_context(DOMAIN) as context:
        probe = ss.TrafficProbe(context)
        try:
            yield probe
        finally:
            probe.close()


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_every_stop_is_clean(name, logs_dir, probe, tmp_path):
    (scenario,) = [s for s in scenarios(logs_dir) if s.name == name]
    stops: list[ss.Stop] = []
    slots: list = []
    try:
        if scenario.warm is not None:
            scenario.warm(tmp_path)
        if scenario.slot is not None:
            ss.threaded([lambda k=k: slots.append(scenario.slot(k))
                         for k in range(scenario.batch)])
        with ss.busy_core():
            for first in range(0, STOPS, scenario.batch):
                stops += run_round(scenario, range(first, min(first + scenario.batch, STOPS)),
                                   tmp_path, probe, slots)
    finally:
        for slot in slots:
            slot.stop()
    report = ss.summary(stops)
    print(report)
    assert len(stops) == STOPS and all(stop.clean for stop in stops), report
