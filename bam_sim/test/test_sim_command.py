"""run_command: the exit codes and stop signals of every executable that is not a node."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from bam_sim.common.command import (
    Interrupted,
    outside_main_thread,
    record_written,
    run_command,
    shielded,
)
from bam_sim.common.errors import BamError


@pytest.fixture(autouse=True)
def _handlers_kept():
    """A command stopped here leaves the signals absorbed (its process is on its way
    out): give pytest its own handlers back."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def _script(body: str) -> subprocess.CompletedProcess:
    """``body`` run in a fresh interpreter (it signals itself), its output captured."""
    code = "import os, signal\nfrom pathlib import Path\n" \
           "from bam_sim.common.command import *\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)


def test_work_done_is_0_and_bad_input_is_2_with_one_line(capsys):
    assert run_command("t", lambda stop: "done") == 0
    assert capsys.readouterr().out == "done\n"

    def bad(stop):
        raise BamError("--mass must be positive,\n got -1")

    assert run_command("t", bad) == 2
    err = capsys.readouterr().err
    assert err == "t: error: --mass must be positive, got -1\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_is_128_plus_it_and_names_what_was_written(tmp_path, capsys, signum):
    done = tmp_path / "first.txt"

    def work(stop):
        done.write_text("whole")
        record_written(done)
        os.kill(os.getpid(), signum)  # raises KeyboardInterrupt here
        raise AssertionError("not stopped")

    assert run_command("t", work) == 128 + signum
    err = capsys.readouterr().err
    assert err == f"t: interrupted by {signal.Signals(signum).name}; written: {done}\n"


def test_a_shielded_write_ends_whole_and_later_signals_are_absorbed(tmp_path, capsys):
    target = tmp_path / "report.md"

    def work(stop):
        with shielded():
            os.kill(os.getpid(), signal.SIGTERM)  # deferred: the write goes on
            os.kill(os.getpid(), signal.SIGINT)  # absorbed
            target.write_text("complete")
        assert stop.requested.is_set()
        os.kill(os.getpid(), signal.SIGINT)  # only the first signal ever raises
        raise Interrupted(f"wrote {target}")

    assert run_command("t", work) == 128 + signal.SIGTERM
    assert capsys.readouterr().out == f"wrote {target}\n"
    assert target.read_text() == "complete"


def test_a_signal_after_the_stop_never_kills_the_process():
    """A second SIGTERM once the command has stopped (its shutdown done, the process on its
    way out) leaves it to exit 143 by itself, not to die by the signal (-15)."""
    result = _script("""
        code = run_command("t", lambda stop: os.kill(os.getpid(), signal.SIGTERM))
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        print("still here")
        raise SystemExit(code)
    """)
    assert result.returncode == 143, result.stderr
    assert result.stdout == "still here\n"
    assert result.stderr == "t: interrupted by SIGTERM; nothing was written\n"


def test_without_a_stop_the_handlers_are_given_back():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert run_command("t", lambda stop: None) == 0
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_request_only_stop_raises_inside_interrupting_only():
    result = _script("""
        def work(stop):
            os.kill(os.getpid(), signal.SIGTERM)  # a request: the work checks it
            assert stop.requested.is_set()
            try:
                with stop.interrupting():
                    pass
            except KeyboardInterrupt:
                return "stopped at the check"
            return "not stopped"
        raise SystemExit(run_command("t", work, raising=False))
    """)
    assert (result.returncode, result.stdout) == (143, "stopped at the check\n"), result.stderr


def test_simulate_stopped_by_ctrl_c_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the simulation (a real SIGINT, sent from inside the rollout): exit
    130, one line, no traceback, and no figure half written."""
    from bam_sim.bench import simulate_cli

    def interrupted(params, log):
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("not stopped")

    monkeypatch.setattr(simulate_cli, "rollout", interrupted)
    out = tmp_path / "sim.png"
    assert simulate_cli.main(["--output", str(out)]) == 130
    assert capsys.readouterr().err == "simulate: interrupted by SIGINT; nothing was written\n"
    assert not out.exists()


def test_an_interrupt_lost_in_a_destructor_is_raised_at_the_next_check():
    """The handler's KeyboardInterrupt inside a ``__del__`` is discarded by Python: no
    "Exception ignored" traceback, and the loop's next raise_if_stopped() ends the work."""
    result = _script("""
        class Dropped:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGTERM)  # the handler raises in here: lost

        def work(stop):
            steps = 0
            while True:
                raise_if_stopped()
                steps += 1
                if steps == 1:
                    Dropped()  # collected at once
                if steps > 1000:
                    return "the loop went on"
        code = run_command("t", work)
        print("ran", code)
        raise SystemExit(code)
    """)
    assert (result.returncode, result.stdout) == (143, "ran 143\n"), result.stderr
    assert result.stderr == "t: interrupted by SIGTERM; nothing was written\n"


def test_an_interrupt_lost_in_a_destructor_ends_a_step_that_has_no_check():
    """As in a numba compilation: the interrupt lands in a destructor, and the step runs
    on without calling raise_if_stopped. It is delivered again and ends the step."""
    result = _script("""
        class Dropped:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)  # the handler raises in here: lost

        def work(stop):
            Dropped()  # collected at once
            while True:  # Python with no check, for as long as it takes (_script's timeout)
                pass
        raise SystemExit(run_command("t", work))
    """)
    assert (result.returncode, result.stdout) == (130, ""), result.stderr
    assert result.stderr == "t: interrupted by SIGINT; nothing was written\n"


def test_a_stop_inside_an_import_waits_for_its_end(tmp_path):
    """A module that prints what cuts its import and turns it into an ImportError, as a C
    extension's module init does when numpy's import fails under it (PyErr_Print): the
    stop lands in its body, the import ends whole, and the work is stopped after it."""
    (tmp_path / "extension_like.py").write_text(textwrap.dedent("""
        import os, signal, traceback
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the stop, while this module loads
            LOADED = True
        except BaseException:
            traceback.print_exc()
            raise ImportError("extension_like failed to import") from None
    """))
    result = _script(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})

        def work(stop):
            import extension_like
            print("loaded", extension_like.LOADED, flush=True)
            while True:  # no check: the stop is delivered again here
                pass
        raise SystemExit(run_command("t", work))
    """)
    assert (result.returncode, result.stdout) == (143, "loaded True\n"), result.stderr
    assert result.stderr == "t: interrupted by SIGTERM; nothing was written\n"


def test_a_destructor_failing_after_the_stop_is_one_line():
    """The interrupt cuts an object short in its constructor; its destructor then fails on
    the missing attribute (llvmlite's, seen in the stop stress): one line, no traceback."""
    result = _script("""
        class HalfMade:
            def __init__(self):
                os.kill(os.getpid(), signal.SIGTERM)  # raises here: self.handle never set
                self.handle = 1
            def __del__(self):
                del self.handle

        def work(stop):
            HalfMade()
        raise SystemExit(run_command("t", work))
    """)
    assert result.returncode == 143, result.stderr
    assert sorted(result.stderr.splitlines()) == [  # in the order the objects are freed
        "ignored while stopping, in HalfMade.__del__: AttributeError: 'HalfMade' object has "
        "no attribute 'handle'", "t: interrupted by SIGTERM; nothing was written"]


def test_work_outside_the_main_thread_gives_its_value_and_its_error():
    def work(stop):
        assert outside_main_thread(lambda: threading.current_thread().name) != "MainThread"
        with pytest.raises(BamError, match="inside"):
            outside_main_thread(lambda: (_ for _ in ()).throw(BamError("inside")))
        return "done"

    assert run_command("t", work) == 0


def test_a_stop_leaves_work_outside_the_main_thread_uncut_and_ends_the_process():
    """As numba compiling when the stop comes: the work never sees an exception, the
    command ends at once with its one line, the work still running (nothing can stop it)."""
    result = _script("""
        import threading
        def uncut():
            os.kill(os.getpid(), signal.SIGTERM)
            try:
                while True:  # a compilation nothing can stop
                    pass
            except BaseException as exc:
                print("cut by", type(exc).__name__, flush=True)

        def work(stop):
            outside_main_thread(uncut)
            return "the work ended"
        raise SystemExit(run_command("t", work))
    """)
    assert (result.returncode, result.stdout) == (143, ""), result.stderr
    assert result.stderr == "t: interrupted by SIGTERM; nothing was written\n"


def test_a_kernel_compiles_once_outside_the_main_thread_for_the_types_of_its_call():
    """The rollouts' first call of a kernel: numba compiles it in another thread, for the
    types of the call (no second compile), and runs it in the main thread. Run from the
    other thread, a parallel kernel made numba's OpenMP layer end the forked children of
    the properties pass ("fork() called from a process already using GNU OpenMP")."""
    result = _script("""
        import threading
        import numpy as np
        from numba import njit, prange
        from numba.core import event
        from bam_sim.bench.rollouts import _kernel

        seen = {"compiled": set(), "ran": set()}
        class Compiles(event.Listener):
            def on_start(self, ev):
                seen["compiled"].add(threading.current_thread().name)
            def on_end(self, ev):
                pass
        event.register("numba:compile", Compiles())

        @njit(parallel=True)
        def double(a, out):
            for i in prange(a.size):
                out[i] = 2.0 * a[i]

        def work(stop):
            out = np.zeros(64)
            for _ in range(2):
                _kernel(double, np.ones(64), out)
            return f"{len(double.signatures)} {sorted(seen['compiled'])} {out.sum()}"
        raise SystemExit(run_command("t", work))
    """)
    assert (result.returncode, result.stdout) == (0, "1 ['outside-main-thread'] 128.0\n"), \
        result.stderr


def test_raise_if_stopped_keeps_to_shields_and_to_request_only_stops():
    result = _script("""
        def work(stop):
            steps = []
            try:
                with stop.interrupting():
                    with shielded():
                        os.kill(os.getpid(), signal.SIGTERM)  # deferred by the shield
                        raise_if_stopped()  # a shield is never cut short
                        steps.append("shield whole")
                    raise_if_stopped()
                    steps.append("not raised")
            except KeyboardInterrupt:
                steps.append("raised after the shield")
            raise_if_stopped()  # request-only, outside interrupting(): the caller checks
            return ", ".join(steps)
        raise SystemExit(run_command("t", work, raising=False))
    """)
    assert (result.returncode, result.stdout) == (
        143, "shield whole, raised after the shield\n"), result.stderr


def test_a_second_signal_inside_the_first_handler_is_absorbed_without_a_lock():
    """The second signal's handler may run inside the first one's (it did: inside its
    Event.set, whose lock it then waited for forever). The stop request takes no lock."""
    result = _script("""
        import threading
        def work(stop):
            flag = stop.requested
            assert not isinstance(flag, type(threading.Event()))
            plain_set = flag.set
            def set_with_a_signal_inside():
                os.kill(os.getpid(), signal.SIGINT)  # handled right here, re-entering
                plain_set()
            flag.set = set_with_a_signal_inside
            with shielded():
                os.kill(os.getpid(), signal.SIGTERM)
            assert flag.wait(5.0)
            return "stopped once"
        raise SystemExit(run_command("t", work))
    """)
    assert (result.returncode, result.stdout) == (143, "stopped once\n"), result.stderr
