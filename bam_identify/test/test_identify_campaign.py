"""Campaign jobs: checked when added, resumed when handed back, failures said by the worker."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa
from identify_cases import write_m1_logs

from bam_identify.campaign_cli import campaign_main
from bam_identify.fitting.campaign import MARKER
from bam_sim.models.files.parameter_file import load, published_named, save

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load

TIMEOUT = 120.0  # s: only reached when something is wrong (a loaded machine is slow)
WORK = "from bam_identify.campaign_cli import campaign_main; raise SystemExit(campaign_main())"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return write_m1_logs(tmp_path_factory.mktemp("logs"))


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    pgserver = pytest.importorskip("pgserver")
    server = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    yield server
    server.cleanup()


@pytest.fixture(params=["sqlite", "postgresql"])
def storage(request, tmp_path) -> str:
    """A new, empty storage: a SQLite file, or a database of the PostgreSQL fixture."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fits.db'}"
    server = request.getfixturevalue("postgres")
    name = re.sub(r"\W", "_", request.node.name).lower()[:48]
    server.psql(f"CREATE DATABASE {name};")
    return server.get_uri(name).replace("postgresql://", "postgresql+psycopg://", 1)


def _add(storage: str, name: str, *extra) -> list[str]:
    return ["add", "--storage", storage, "--campaign", name, *map(str, extra), "--quiet"]


def _code(args: list[str]) -> int:
    """campaign_main's exit code, whether it returns it or argparse exits with it."""
    try:
        return campaign_main(args)
    except SystemExit as exc:
        return exc.code


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def _query(url: str, sql: str) -> list:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text(sql)).all()
    except sa.exc.DBAPIError:  # no such table yet
        return []
    finally:
        engine.dispose()


@pytest.mark.parametrize(("extra", "message"), [
    ([], "no data: give --bags and/or --logs"),
    (["--trials", "-5"], "trials"),
])
def test_add_refuses_a_job_that_cannot_run(extra, message, storage, tmp_path, capsys):
    data = [] if not extra else ["--logs", tmp_path]
    assert _code(_add(storage, "c", *data, *extra)) == 2
    assert message in _one_error(capsys)
    assert not _query(storage, "SELECT * FROM bam_fit_jobs")


def test_add_refuses_an_empty_name(log_dir, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'fits.db'}"
    assert campaign_main(_add(url, " ", "--logs", log_dir)) == 2
    assert "--campaign must not be empty" in _one_error(capsys)


def test_the_same_add_twice_queues_nothing_twice(log_dir, storage, tmp_path, capsys):
    """Adding a campaign again is idempotent (a script may retry it); a different job onto
    the same files is refused."""
    args = _add(storage, "c", "--logs", log_dir, "--models", "m1", "m2",
                "--output", tmp_path / "{model}.yaml", "--report", tmp_path / "report")
    assert campaign_main(args) == 0
    capsys.readouterr()
    assert campaign_main(args) == 0
    assert "nothing new to queue; 2 already queued (jobs 0, 1)" in capsys.readouterr().out
    assert campaign_main([*args, "--trials", "99"]) == 2
    assert "the m1 job would write file" in _one_error(capsys)
    assert len(_query(storage, "SELECT * FROM bam_fit_jobs")) == 2


def test_add_refuses_two_jobs_writing_one_file(log_dir, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'fits.db'}"
    # one campaign: an --output without {model} is named per model, as fit names it
    assert campaign_main(_add(url, "a", "--logs", log_dir, "--models", "m1", "m2",
                              "--output", tmp_path / "fit.yaml", "--report",
                              tmp_path / "ra")) == 0
    jobs = _query(url, "SELECT job FROM bam_fit_jobs ORDER BY number")
    assert [re.search(r'"output": "([^"]+)"', j).group(1) for (j,) in jobs] == [
        str(tmp_path / "fit_m1.yaml"), str(tmp_path / "fit_m2.yaml")]
    capsys.readouterr()
    # another campaign onto the files of the first, still queued
    assert campaign_main(_add(url, "b", "--logs", log_dir, "--models", "m2",
                              "--output", tmp_path / "fit_m2.yaml", "--report",
                              tmp_path / "rb")) == 2
    err = _one_error(capsys)
    assert f"would write file {tmp_path / 'fit_m2.yaml'}, as job 1 of campaign a" in err
    assert campaign_main(_add(url, "b", "--logs", log_dir, "--models", "m1",
                              "--output", tmp_path / "b.yaml", "--report", tmp_path / "ra")) == 2
    assert f"would write folder {tmp_path / 'ra' / 'm1'}" in _one_error(capsys)


def _await_a_generation(url: str, process: subprocess.Popen) -> None:
    """Until the job's study holds a finished generation (its best set is then saved when
    the worker is stopped)."""
    deadline = time.monotonic() + TIMEOUT
    while not _query(url, "SELECT 1 FROM bam_fit_items WHERE complete"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no generation recorded"
        time.sleep(0.1)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_job_handed_back_is_resumed_over_its_own_output(log_dir, tmp_path, signum):
    url = f"sqlite:///{tmp_path / 'fits.db'}"
    where = ["--storage", url, "--campaign", "c"]
    out, report = tmp_path / "{model}.yaml", tmp_path / "report"
    assert campaign_main(_add(url, "c", "--logs", log_dir, "--models", "m1", "--trials",
                              3000, "--output", out, "--report", report)) == 0
    first = subprocess.Popen([sys.executable, "-c", WORK, "work", *where, "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _await_a_generation(url, first)
        # Seen running, frozen, then signalled: the stop lands mid-job however fast the
        # fit runs (the signal is delivered as the worker continues). The database is
        # not read while the worker is frozen: it may hold SQLite's write lock.
        state = _query(url, "SELECT state FROM bam_fit_jobs")
        first.send_signal(signal.SIGSTOP)
        assert state == [("running",)], f"job {state} before the stop; raise --trials"
        first.send_signal(signum)
        first.send_signal(signal.SIGCONT)
        stdout, err = first.communicate(timeout=TIMEOUT)
    finally:
        first.kill()
        first.wait()
    assert first.returncode == 128 + signum, err
    assert "Traceback" not in err and "job 0 given back" in stdout, stdout + err
    partial = load(tmp_path / "m1.yaml")
    assert partial.provenance["interrupted"] is True
    assert (report / "m1" / MARKER).is_file() and (report / "m1" / "report.md").is_file()
    assert _query(url, "SELECT state FROM bam_fit_jobs") == [("waiting",)]

    second = subprocess.run([sys.executable, "-c", WORK, "work", *where, "--quiet"],
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "this worker ran 1 (0)" in second.stdout
    done = load(tmp_path / "m1.yaml")
    assert done.provenance["interrupted"] is False and done.provenance["study"] == "c_m1"
    assert _query(url, "SELECT state FROM bam_fit_jobs") == [("done",)]


@pytest.mark.parametrize("foreign", ["output", "report"])
def test_someone_elses_files_fail_the_job_and_the_worker(log_dir, tmp_path, foreign, capsys):
    url = f"sqlite:///{tmp_path / 'fits.db'}"
    out, report = tmp_path / "m1.yaml", tmp_path / "report"
    if foreign == "output":  # a set fitted elsewhere, not in this campaign's study
        save(published_named("mx64", "m1"), out)
    else:
        (report / "m1").mkdir(parents=True)
        (report / "m1" / "notes.txt").write_text("mine")
    before = out.read_bytes() if out.exists() else None
    assert campaign_main(_add(url, "c", "--logs", log_dir, "--models", "m1", "--trials", 50,
                              "--output", tmp_path / "{model}.yaml", "--report", report)) == 0
    capsys.readouterr()
    assert campaign_main(["work", "--storage", url, "--campaign", "c", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("campaign: error: campaign c: job 0 failed"), err
    assert "this worker ran 1 (0)" in err[-1]
    assert "not this job's" in err[0] or "is not the output of campaign c" in err[0], err
    assert _query(url, "SELECT state FROM bam_fit_jobs") == [("failed",)]
    if before is not None:
        assert out.read_bytes() == before
    else:
        assert (report / "m1" / "notes.txt").read_text() == "mine"
        assert sorted(p.name for p in (report / "m1").iterdir()) == ["notes.txt"]
