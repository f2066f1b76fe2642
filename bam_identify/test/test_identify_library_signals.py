"""The library knows nothing of signals (DESIGN.md, process edge): every module of the
models, the bench, the fit and the data, imported in a fresh interpreter, installs no
signal handler, masks no signal, and loads none of the process edge's modules."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import bam_identify.data
import bam_identify.fitting
import bam_sim.bench
import bam_sim.models

LIBRARY = (bam_sim.bench, bam_sim.models, bam_identify.fitting, bam_identify.data)
EDGE = ("bam_sim.common.entry_point", "bam_sim.common.runner", "bam_sim.common.startup",
        "bam_sim.common.exit_timer", "bam_sim.common.shm_ports")
TIMEOUT = 600.0  # s: the imports of numba, SciPy, optuna, matplotlib on a loaded machine

# Every call that changes a signal's handling is recorded with the module that made it;
# after each library module's import, the edge modules loaded so far are noted.
PROBE = textwrap.dedent("""
    import importlib, json, signal, sys

    calls = []
    def recorded(name):
        real = getattr(signal, name)
        def record(*args, **kwargs):
            calls.append([name, sys._getframe(1).f_globals.get("__name__", "?")])
            return real(*args, **kwargs)
        return record
    for name in ("signal", "pthread_sigmask", "set_wakeup_fd", "siginterrupt"):
        setattr(signal, name, recorded(name))

    edge, found = json.loads(sys.argv[1]), {}
    for module in json.loads(sys.argv[2]):
        importlib.import_module(module)
        found[module] = sorted(e for e in edge if e in sys.modules)
    print(json.dumps({"calls": calls, "edge": found}))
""")


def library_modules() -> list[str]:
    names = []
    for package in LIBRARY:
        names.append(package.__name__)
        names += [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return names


def test_the_library_modules_import_no_signal_handling():
    modules = library_modules()
    files = [f for package in LIBRARY for f in Path(package.__path__[0]).rglob("*.py")]
    assert len(modules) == len(files)  # every module of every subpackage
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(EDGE), json.dumps(modules)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["calls"] == []
    pulled = {module: edge for module, edge in seen["edge"].items() if edge}
    assert pulled == {}, f"library modules that load the process edge: {pulled}"
