"""The ROS-free command state and link of every driver, on a simulated monotonic clock."""

from __future__ import annotations

import pytest

from bam_drivers.supervisor import (
    RETRY_MAX,
    RETRY_MIN,
    WRITE_REPEATS,
    CommandState,
    ConfigurationError,
    Link,
    LogThrottle,
)
from bam_sim.common.commands import JointCommand
from bam_sim.common.errors import BamError


def command(indices=(0, 1), goals=None, enables=None, gains=None) -> JointCommand:
    return JointCommand(indices=tuple(indices), goals=goals, torque_enables=enables,
                        gains=gains)


def test_watchdog_trips_on_stale_commands_and_the_next_command_restores():
    state = CommandState(2, enabled=True, gain=8.0, timeout=0.5, now=100.0)
    state.take(), state.take()
    assert not state.check_watchdog(100.499)
    assert state.check_watchdog(100.5)
    assert state.tripped and state.enables == [False, False]
    taken = [state.take() for _ in range(WRITE_REPEATS + 1)]
    assert [c.write_torque for c in taken] == [True] * WRITE_REPEATS + [False]
    assert not state.check_watchdog(200.0)  # tripped once, not again
    assert state.apply(command(goals=(0.1, 0.2)), 200.0)
    assert not state.tripped and state.enables == [True, True]
    assert state.goals == [0.1, 0.2]
    assert not state.check_watchdog(200.4) and state.check_watchdog(200.5)


def test_an_explicit_torque_command_after_a_trip_is_obeyed_not_restored():
    state = CommandState(2, enabled=True, gain=8.0, timeout=0.1, now=0.0)
    assert state.check_watchdog(0.2)
    assert not state.apply(command(enables=(False, True)), 0.3)
    assert state.enables == [False, True]


def test_no_watchdog_with_zero_timeout_and_new_timeout_counts_from_now():
    state = CommandState(1, enabled=True, gain=1.0, timeout=0.0, now=0.0)
    assert not state.check_watchdog(1e9)
    state.set_timeout(2.0, now=10.0)
    assert not state.check_watchdog(11.99) and state.check_watchdog(12.0)


def test_released_goals_follow_the_position_until_a_goal_is_given():
    state = CommandState(2, enabled=False, gain=1.0, timeout=0.0, now=0.0)
    state.follow({0: 0.3, 1: -0.2})
    assert state.goals == [0.3, -0.2]
    state.apply(command(indices=(1,), goals=(1.0,)), 0.0)
    state.follow({0: 0.4, 1: 0.5})
    assert state.goals == [0.4, 1.0]


def test_gain_writes_only_on_change_and_after_reconnection():
    state = CommandState(1, enabled=True, gain=8.0, timeout=0.0, now=0.0)
    assert not state.take().write_gains
    state.apply(command(indices=(0,), gains=(8.0,)), 0.0)
    assert not state.take().write_gains
    state.apply(command(indices=(0,), gains=(16.0,)), 0.0)
    assert state.take().write_gains and state.take().write_gains
    assert not state.take().write_gains
    state.rewrite({0: 0.1})
    c = state.take()
    assert c.write_gains and c.write_torque and c.goals == (0.1,)


def test_link_reconnects_after_the_backoff_and_reports_the_outage():
    link = Link(stale=0.5)
    assert link.attempt_due(0.0)
    link.failed("absent", 0.0)
    assert link.state == "reconnecting: absent" and not link.attempt_due(0.09)
    assert link.attempt_due(RETRY_MIN)
    assert link.opened(0.3) is None and link.is_open
    link.count(2, 2, 1.0)
    link.count(0, 2, 1.2)
    assert not link.silent(1.5) and link.silent(1.51)
    link.lost("unplugged", 2.0)
    assert link.opened(3.0) == 1.0
    assert link.stats == {"cycles": 2, "full_reads": 1, "partial_reads": 0,
                          "failed_reads": 1, "port_losses": 1, "reconnects": 2, "attempts": 0}


def test_link_backs_off_to_its_cap_and_starts_again_after_a_connection():
    link = Link(stale=0.5)
    now, waits = 0.0, []
    for _ in range(8):
        link.failed("absent", now)
        waits.append(link.wait(now))
        now += waits[-1]
    assert waits == pytest.approx([min(RETRY_MIN * 2**k, RETRY_MAX) for k in range(8)])
    assert waits[-1] == RETRY_MAX and 1.0 <= RETRY_MAX <= 2.0
    link.opened(now)
    link.lost("unplugged", now + 1.0)
    assert link.wait(now + 1.0) == pytest.approx(RETRY_MIN)  # backoff reset
    link.failed("absent", now + 1.1)
    assert link.wait(now + 1.1) == pytest.approx(RETRY_MIN)


def test_a_link_that_never_opened_gives_up_at_its_connect_timeout_only():
    link = Link(stale=0.5, connect_timeout=2.0, started=10.0)
    now, attempts = 10.0, []
    while True:
        attempts.append(now)
        failure = link.attempt_failed(BamError("no such port"), now, "servo ids [1] on /dev/x")
        if failure is not None:
            break
        assert not link.gave_up(now)
        now += link.wait(now)
    # Backing off, and the last attempt at the deadline rather than a backoff later.
    assert attempts == pytest.approx([10.0, 10.1, 10.3, 10.7, 11.5, 12.0])
    assert link.gave_up(12.0)
    assert "servo ids [1] on /dev/x within connect_timeout 2 s: no such port" in str(failure)
    assert "connect_timeout:=0.0" in str(failure)
    # A configuration error ends it at once; after a first connection, nothing does.
    fresh = Link(stale=0.5, connect_timeout=2.0)
    assert fresh.attempt_failed(ConfigurationError("model"), 0.0, "x") is not None
    forever = Link(stale=0.5, connect_timeout=0.0)
    assert forever.attempt_failed(BamError("absent"), 1.0e6, "x") is None
    lost = Link(stale=0.5, connect_timeout=2.0)
    lost.opened(1.0)
    lost.lost("unplugged", 1.5)
    for now in (2.0, 100.0, 1.0e5):
        assert lost.attempt_failed(BamError("absent"), now, "x") is None
        assert lost.attempt_failed(ConfigurationError("model"), now, "x") is None


def test_log_throttle_holds_back_and_counts():
    lines = []
    throttle = LogThrottle(lambda level, text: lines.append((level, text)), period=10.0)
    assert throttle.log("port", "error", "lost", 0.0)
    assert not throttle.log("port", "error", "lost", 5.0)
    assert throttle.log("other", "warning", "x", 5.0)
    assert throttle.log("port", "error", "lost", 10.0)
    assert lines == [("error", "lost"), ("warning", "x"),
                     ("error", "lost (1 more since the last report)")]
