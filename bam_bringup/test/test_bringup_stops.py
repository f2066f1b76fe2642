"""Every long-running executable stops cleanly after real traffic: once per signal.

Each scenario of ``stop_scenarios`` starts two instances at once, brings them to real work
and stops one by SIGTERM, the other by SIGINT: exit 128 + the signal, no traceback, nothing
left running, bags readable, torque off as the emulator reads it. The exit's bound here
only catches a hang. The double signals (a second one during the shutdown) and how fast the
stops are, over many of them under load, are the soak benchmark's (``make soak``): each
instance costs the gate a process's start and its traffic (the four patterns here took a
quarter of the live tests' CPU time, measured).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import stop_scenarios as sc

from bam_testing import stop_stress as ss

pytestmark = pytest.mark.live

HANG = 60.0  # s from the first signal: an exit later than this is a hang, not a slow stop
SIGNALS = ss.PATTERNS[:2]  # SIGTERM, SIGINT: the soak runs the double ones


@pytest.fixture(scope="module")
def logs_dir(tmp_path_factory) -> Path:
    return sc.write_logs(tmp_path_factory.mktemp("logs"))


@pytest.fixture(scope="module")
def probe():
    with sc.probing() as probe:
        yield probe


@pytest.mark.parametrize("name", sc.SCENARIO_NAMES)
def test_a_stop_after_traffic_is_clean(name, logs_dir, probe, tmp_path):
    (scenario,) = [s for s in sc.scenarios(logs_dir) if s.name == name]
    try:
        stops = sc.run_scenario(scenario, len(SIGNALS), tmp_path, probe, HANG,
                                batch=len(SIGNALS))
    except sc.Unavailable as exc:
        pytest.skip(str(exc))
    report = ss.summary(stops)
    print(report)
    assert sorted(stop.signals for stop in stops) == sorted(SIGNALS), report
    assert all(stop.clean for stop in stops), report
