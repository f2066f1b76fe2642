"""Every long-running executable, brought to real work and stopped: the scenarios shared by
the gate's one stop per executable and signal (``test_bringup_stops.py``) and the soak
benchmark's many (``benchmarks/soak.py``).

Each executable runs as installed (its console script), in a session of its own, several
instances at once in namespaces of one private DDS domain. After the instances have
exchanged messages with the probe (or reached the phase a stop must survive: the search
or the Levenberg-Marquardt polish of a fit, a campaign job), they are stopped by SIGTERM,
SIGINT, SIGTERM+SIGTERM or SIGINT+SIGTERM in turn (bam_testing.stop_stress): each must
exit with 128 + the first signal, print no traceback and leave no process behind; a bag it
wrote must read back, and a driver must have turned the torque off as its emulator reads
it. How fast it exits is the soak's figure, not the gate's verdict.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bam_sim.models.servo.actuators import get_actuator
from bam_testing import stop_stress as ss
from bam_testing.ros_context import private_context, ros_domain

DOMAIN = ros_domain(4)  # one domain for every round; namespaces keep the instances apart


def script(package: str, executable: str) -> str:
    """The installed console script of ``executable``, as ``ros2 run`` finds it."""
    from ament_index_python.packages import get_package_prefix

    return str(Path(get_package_prefix(package)) / "lib" / package / executable)


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "ROS_DOMAIN_ID": str(DOMAIN), "PYTHONUNBUFFERED": "1",
            "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", **extra}


class Unavailable(Exception):
    """A scenario cannot run on this machine (no network namespaces for the EtherCAT
    emulator): a skip, not a failed stop."""


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


# SCHED_FIFO priority of the serial emulators (root; normal elsewhere), above every
# driver: the emulator stands for servos, which answer whatever the host is busy with.
# At normal priority, beside a busy loop per core and two test passes, both emulators of
# the Dynamixel scenario once applied none of 2 s of torque-off writes (likely a clock
# that cannot keep real time holding the device's lock between catch-ups); the eRob
# emulator runs at a priority too.
EMULATOR_PRIORITY = 30


def serial_emulator(driver: str) -> Callable:
    """The emulator of one slot: its drivers, one after the other, run on it."""
    def make(slot: int):
        from bam_drivers.emulators.client import EmulatorProcess

        return EmulatorProcess(**SERIAL[driver][0], priority=EMULATOR_PRIORITY)
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
        raise Unavailable(f"EtherCAT emulator unavailable: {exc}") from None


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

def start_built(package: str, executable: str, namespace: str, log: Path) -> ss.Started:
    """``executable`` in ``namespace``, once it logged its first line (built)."""
    started = ss.start(executable, [script(package, executable), *ros_args(namespace)], log,
                       (signal.SIGTERM,), environment())
    try:
        started.wait_output(f"[{namespace[1:]}.{executable}]")
    except AssertionError:
        ss.kill_leftovers([started])
        raise
    return started


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
    from bam_sim.models.files.parameter_file import published_named, save

    params = tmp / f"monitor_{i}.yaml"
    save(published_named("mx64", "m4"), params)
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

def write_logs(folder: Path) -> Path:
    """Legacy logs of a simulated MX-64 (the fits' input), written into ``folder``."""
    from bam_identify.data.legacy_logs import write_legacy_log
    from bam_identify.data.synthetic import paper_like_set
    from bam_sim.models.files.parameter_file import published_named

    truth = published_named("mx64", "m1")
    logs = paper_like_set(truth, 4, duration=1.5, seed=8)
    folder.mkdir(parents=True, exist_ok=True)
    for i, log in enumerate(logs):
        write_legacy_log(folder / f"{i}.json", log, get_actuator("mx64"), log.meta["trajectory"])
    return folder


def fit_args(logs: Path, tmp: Path, i: int, *extra: str) -> list[str]:
    return ["--logs", str(logs), "--models", "m1", "--trials", "1000000",
            "--output", str(tmp / f"fit_{i}" / "{model}.yaml"),
            "--report", str(tmp / f"fit_{i}" / "report"), "--quiet", *extra]


def fit_start(name: str, *extra: str) -> Callable:
    """``fit`` as installed, its study recorded in SQLite: how far it is, read from there."""
    def start(logs: Path) -> Callable:
        def started(i: int, tmp: Path, signals: tuple, slot: object = None) -> ss.Started:
            database = tmp / f"{name}_{i}.db"
            run = ss.start(f"fit ({name})",
                           [script("bam_identify", "fit"),
                            *fit_args(logs, tmp, i, "--storage", f"sqlite:///{database}",
                                      *extra)],
                           tmp / f"fit_{name}_{i}.log", signals, environment())
            run.data["database"] = database
            return run
        return started
    return start


def study_items(database: Path, kind: str, finished: bool) -> int:
    """Items of ``kind`` (``cma``: a generation's share; ``lm``: a polish) claimed in the fit's
    study record, finished or not."""
    import sqlalchemy as sa

    if not database.exists():
        return 0
    engine = sa.create_engine(f"sqlite:///{database}")
    done = "IS NOT NULL" if finished else "IS NULL"
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(
                f"SELECT COUNT(*) FROM bam_fit_items WHERE kind = '{kind}' AND finished {done}"
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
        if not study_items(database, "lm", finished=False):
            return False
        os.kill(started.process.pid, signal.SIGSTOP)
        ss.until(lambda: ss.stopped(started.process.pid), "the fit frozen")
        if study_items(database, "lm", finished=False):  # it cannot leave while frozen
            return True
        os.kill(started.process.pid, signal.SIGCONT)
        return False

    started.wait(in_polish, "a polish under way")
    started.data["frozen"] = True


def fit_search_ready(started: ss.Started, probe: ss.TrafficProbe) -> None:
    """Generations of the CMA-ES search scored: the fit is in its search."""
    database = started.data["database"]
    started.wait(lambda: study_items(database, "cma", finished=True) >= 2,
                 "a search under way")


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
    started.wait_output("job 0: m1")


# -- the rounds -----------------------------------------------------------------------------------

def scenarios(logs: Path) -> list[Scenario]:
    return [
        Scenario("pendulum", 10, node_start("bam_sim", "pendulum"), drive),
        Scenario("arm", 10, node_start("bam_sim", "arm"), drive),
        Scenario("recorder", 10, recorder_start, recorder_ready, recorder_check),
        Scenario("trajectory", 10, node_start("bam_identify", "trajectory"), trajectory_ready),
        Scenario("dynamixel", 5, serial_start("dynamixel"), driver_ready, torque_check,
                 serial_emulator("dynamixel")),
        Scenario("feetech", 5, serial_start("feetech"), driver_ready, torque_check,
                 serial_emulator("feetech")),
        Scenario("erob", 5, erob_start, driver_ready, torque_check, erob_emulator),
        Scenario("monitor", 5, monitor_start, monitor_ready, slot=PendulumSlot),
        Scenario("bench serve", 5, bench_serve_start, drive, bench_serve_check),
        Scenario("bench session", 5, bench_session_start,
                 lambda s, p: s.wait_output("first message on"), bench_session_check),
        Scenario("fit (search)", 5, fit_start("search")(logs), fit_search_ready),
        Scenario("fit (LM polish)", 5, fit_start("polish")(logs), fit_polish_ready),
        Scenario("campaign work", 5, campaign_start(logs), campaign_ready),
    ]


def run_round(scenario: Scenario, indices: range, tmp: Path, probe: ss.TrafficProbe,
              slots: list, bound: float) -> list[ss.Stop]:
    """Start the instances ``indices`` at once, bring each to its stop, stop them all."""
    started: list[ss.Started] = []

    def launch(i: int) -> None:
        slot = slots[i % len(slots)] if slots else None
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
        stops = ss.stop_all(ready, bound) if ready else []
        for stop, s in zip(stops, ready):
            stop.problems += scenario.check(s)
        return stops + [stop for stop in failed.values() if stop is not None]
    finally:
        ss.kill_leftovers(started)


SCENARIO_NAMES = [s.name for s in scenarios(Path())]


@contextmanager
def probing() -> Iterator[ss.TrafficProbe]:
    """The probe node that exchanges messages with the stopped executables, on their domain."""
    with private_context(DOMAIN) as context:
        probe = ss.TrafficProbe(context)
        try:
            yield probe
        finally:
            probe.close()


def run_scenario(scenario: Scenario, stops: int, tmp: Path, probe: ss.TrafficProbe,
                 bound: float, batch: int | None = None) -> list[ss.Stop]:
    """``stops`` stops of ``scenario``, ``batch`` instances at a time (default: the
    scenario's; the patterns in turn), each exit judged against ``bound`` s."""
    size = min(batch or scenario.batch, stops)
    done: list[ss.Stop] = []
    slots: list = []
    try:
        if scenario.slot is not None:
            ss.threaded([lambda k=k: slots.append(scenario.slot(k)) for k in range(size)])
        for first in range(0, stops, size):
            done += run_round(scenario, range(first, min(first + size, stops)), tmp, probe,
                              slots, bound)
    finally:
        for slot in slots:
            slot.stop()
    return done
