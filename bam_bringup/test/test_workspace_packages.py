"""The packages of the repository are consistent and installed in the workspace."""

import importlib.metadata
import re
from pathlib import Path

import pytest
from ament_index_python.packages import get_package_share_directory
from catkin_pkg.package import parse_package

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ['bam_msgs', 'bam_sim', 'bam_identify', 'bam_drivers', 'bam_bringup', 'bam_testing']
PYTHON_PACKAGES = PACKAGES[1:]


def test_every_package_is_listed():
    found = sorted(p.parent.name for p in ROOT.glob('*/package.xml'))
    assert found == sorted(PACKAGES)


@pytest.mark.parametrize('name', PACKAGES)
def test_manifest(name):
    package = parse_package(ROOT / name / 'package.xml')
    assert package.name == name
    assert package.package_format == 3
    assert package.licenses == ['Apache-2.0']
    # the package is built and visible through the ament index of the environment
    share = Path(get_package_share_directory(name))
    assert (share / 'package.xml').is_file()


@pytest.mark.parametrize('name', PYTHON_PACKAGES)
def test_python_package(name):
    package = parse_package(ROOT / name / 'package.xml')
    assert package.get_build_type() == 'ament_python'
    assert (ROOT / name / 'resource' / name).is_file()
    setup_py = (ROOT / name / 'setup.py').read_text()
    assert re.search(rf"version='{re.escape(package.version)}'", setup_py), \
        'setup.py and package.xml disagree on the version'
    assert importlib.metadata.version(name) == package.version


def test_simulate_entry_point():
    scripts = importlib.metadata.entry_points(group='console_scripts', name='simulate')
    assert [ep.value for ep in scripts] == ['bam_sim.executables:simulate']
    (script,) = scripts
    assert script.load().module == 'bam_sim.simulate_cli'


def test_python_starts_once_in_the_workspace():
    """The venv's local_setup.sh (tools/workspace.sh writes it; install/setup.bash sources
    it) puts the PyPI ROS 2 wheels' libraries on the loader's path: their bootstrapper then
    does not start every Python process a second time to do it (about 50 ms more for each
    command, with Python's own Ctrl-C handler in place). Python's import log, of a command
    run from a shell with only that setup, starts once."""
    import subprocess

    venv = ROOT / '.venv'
    if not (venv / 'local_setup.sh').is_file():
        pytest.skip('no .venv made by tools/workspace.sh (a ROS 2 install)')
    shell = f'. "{venv}/local_setup.sh" && python -X importtime -c pass'
    done = subprocess.run(['env', '-i', 'PATH=/usr/bin:/bin', 'bash', '-c', shell],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count('import time: self [us]') == 1, done.stderr[-2000:]
