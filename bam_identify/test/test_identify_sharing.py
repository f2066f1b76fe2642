"""Shares of a stored study: claims, workers that vanish, jobs as JSON (SQLite)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from bam_identify.campaign_cli import campaign_main
from bam_identify.cli import FitJob
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.campaign import job_from_json, job_to_json
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_identify.fitting.study_record import shares_of
from bam_sim.models.files.parameter_file import published_named
from bam_sim.models.servo.actuators import get_actuator
from bam_testing.processes import read_until

pytestmark = pytest.mark.live  # processes, DDS, buses or signals: rerun under load


@pytest.fixture(scope="module")
def logs():
    return paper_like_set(published_named("mx64", "m1"), 4, duration=1.5, seed=8)


def _items(url: str, study: str) -> list:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT run, generation, share, worker, finished, complete FROM bam_fit_items "
            "WHERE study = :s AND kind = 'cma' ORDER BY run, generation, share"),
            {"s": study}).all()
    engine.dispose()
    return rows


def test_shares_cut_a_generation_in_order():
    parts = shares_of(12, 5)
    assert [len(p) for p in parts] == [3, 3, 2, 2, 2]
    assert sorted(int(i) for p in parts for i in p) == list(range(12))
    assert len(shares_of(3, 8)) == 3  # never an empty share


def test_one_worker_evaluates_every_share_itself(logs, tmp_path):
    """Shares are claims, not a split decided in advance: alone, a worker takes them all,
    and the result is the unshared fit's."""
    space = SearchSpace.from_names("mx64", "m1")
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    shared = identify(space, logs, FitSettings(trials=230, seed=3, storage=url,
                                               study_name="alone", shares=3))
    direct = identify(space, logs, FitSettings(trials=230, seed=3))
    assert shared.values == direct.values and shared.evaluated == 230
    rows = _items(url, "alone")
    generations = {(r.run, r.generation) for r in rows}
    assert len(rows) == 3 * len(generations)  # three shares of every generation
    assert len({r.worker for r in rows}) == 1


def test_a_share_left_by_a_dead_worker_is_taken_over(logs, tmp_path):
    """A claim whose process is gone (same host, pid not running) is evaluated by the
    next worker instead of waited for forever."""
    space = SearchSpace.from_names("mx64", "m1")
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    identify(space, logs, FitSettings(trials=50, seed=5, storage=url, study_name="dead",
                                      shares=2))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    import socket

    engine = sa.create_engine(url)
    with engine.begin() as conn:  # generation 5 (candidates 50..59), share 1: claimed, dead
        conn.execute(sa.text(
            "INSERT INTO bam_fit_items (study, kind, run, generation, share, worker, claimed, "
            "finished, complete, result) VALUES ('dead', 'cma', 0, 5, 1, :w, 0, NULL, 0, "
            "NULL)"), {"w": f"{socket.gethostname()}:{gone}:1"})
    engine.dispose()
    resumed = identify(space, logs, FitSettings(trials=120, seed=5, storage=url,
                                                study_name="dead", shares=2))
    direct = identify(space, logs, FitSettings(trials=120, seed=5))
    assert resumed.values == direct.values and resumed.evaluated == 70
    taken = [r for r in _items(url, "dead") if (r.generation, r.share) == (5, 1)]
    assert taken[0].finished is not None and not taken[0].worker.endswith(":1")


WORKER = """
import json, sys
from bam_identify.data.synthetic import paper_like_set
from bam_identify.fitting.fit import FitSettings, identify
from bam_identify.fitting.space import SearchSpace
from bam_sim.models.files.parameter_file import published_named
from bam_testing.processes import read_until
logs = paper_like_set(published_named("mx64", "m1"), 4, duration=1.5, seed=8)
result = identify(SearchSpace.from_names("mx64", "m1"), logs, FitSettings(
    trials=67, seed=4, popsize=10, polish=False, storage=sys.argv[1], study_name="cut",
    shares=2))
print(json.dumps({"values": result.values, "evaluated": result.evaluated}))
"""


def test_two_workers_end_together_when_the_budget_cuts_a_share(logs, tmp_path):
    """67 candidates of generations of 10 in two shares of 5: the last generation's second
    share is cut after two candidates. Both workers end (neither waits forever for the
    candidates the budget left out), on the unshared fit's set, each candidate evaluated
    once."""
    url = f"sqlite:///{tmp_path / 'fit.db'}"
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, url], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    said = []
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
        said.append(json.loads(out.strip().splitlines()[-1]))
    direct = identify(SearchSpace.from_names("mx64", "m1"), logs,
                      FitSettings(trials=67, seed=4, popsize=10, polish=False))
    assert all(s["values"] == direct.values for s in said)
    assert sum(s["evaluated"] for s in said) == 67
    last = [r for r in _items(url, "cut") if r.generation == 6]
    assert [(r.share, r.complete) for r in last] == [(0, True), (1, False)]
    engine = sa.create_engine(url)
    with engine.connect() as conn:  # the record: every candidate one trial
        numbers = conn.execute(sa.text(
            "SELECT t.number FROM trials t JOIN studies s ON s.study_id = t.study_id "
            "WHERE s.study_name = 'cut.r0'")).scalars().all()
    engine.dispose()
    assert sorted(numbers) == list(range(67))


WORK = "from bam_identify.campaign_cli import campaign_main; raise SystemExit(campaign_main())"


def test_a_terminated_campaign_worker_gives_its_job_back(logs, tmp_path):
    """SIGTERM stops a worker as Ctrl-C does: exit 128 + SIGTERM, its job waiting again for
    the next worker."""
    for i, log in enumerate(logs):
        write_legacy_log(tmp_path / "logs" / f"{i}.json", log, get_actuator("mx64"),
                         log.meta["trajectory"])
    where = ["--storage", f"sqlite:///{tmp_path / 'fits.db'}", "--campaign", "c"]
    assert campaign_main(["add", *where, "--logs", str(tmp_path / "logs"), "--models", "m1",
                          "--trials", "1000000", "--output", str(tmp_path / "{model}.yaml"),
                          "--report", str(tmp_path / "report"), "--quiet"]) == 0
    worker = subprocess.Popen([sys.executable, "-c", WORK, "work", *where, "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        read_until(worker, "job 0: m1\n", timeout=120)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        worker.kill()
        worker.stdout.close()
    jobs = sa.create_engine(f"sqlite:///{tmp_path / 'fits.db'}")
    with jobs.connect() as conn:
        state = conn.execute(sa.text("SELECT state, worker FROM bam_fit_jobs")).all()
    jobs.dispose()
    assert state == [("waiting", None)]


@pytest.mark.parametrize(("extra", "message"), [
    (["--study", "s"], "give --storage too"),
    (["--workers", "2"], "give --storage too"),
    (["--storage", "sqlite:///x.db", "--workers", "0"], r"--workers: must be in \[1, 1000\]"),
    (["--storage", "sqlite:///x.db", "--study", " "], "--study must not be empty"),
])
def test_sharing_options_are_checked_first(extra, message, tmp_path, capsys):
    from bam_identify.cli import fit_main

    try:
        code = fit_main(["--logs", str(tmp_path), "--output", str(tmp_path / "{model}.yaml"),
                         "--report", str(tmp_path / "r"), *extra])
    except SystemExit as exit_:  # argparse's own refusals (a number out of range)
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("action", ["work", "status"])
def test_a_mistyped_storage_or_campaign_is_refused(action, logs, tmp_path, capsys):
    missing = tmp_path / "typo.db"
    assert campaign_main([action, "--storage", f"sqlite:///{missing}", "--campaign", "c"]) == 2
    assert "no database at" in capsys.readouterr().err and not missing.exists()
    for i, log in enumerate(logs):
        write_legacy_log(tmp_path / "logs" / f"{i}.json", log, get_actuator("mx64"),
                         log.meta["trajectory"])
    url = f"sqlite:///{tmp_path / 'fits.db'}"
    assert campaign_main(["add", "--storage", url, "--campaign", "bench", "--logs",
                          str(tmp_path / "logs"), "--models", "m1", "--quiet"]) == 0
    capsys.readouterr()
    assert campaign_main([action, "--storage", url, "--campaign", "bnech"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "campaign bnech has no job" in err


def test_a_fit_job_survives_its_json():
    job = FitJob(bags=(Path("/data/a"), Path("b.mcap")), logs=(Path("legacy"),),
                 actuator="mx64", models=("m4",), trials=900, set=("kt=1.5",),
                 report=Path("out/report/m4"), storage="sqlite:///x.db", study="c_m4",
                 workers=2, target_mae=1e-4)
    text = job_to_json(job)
    assert json.loads(text)["bags"] == ["/data/a", "b.mcap"]
    assert job_from_json(text, FitJob) == job


def test_a_job_with_unknown_options_is_refused():
    from bam_sim.common.errors import BamError

    text = json.dumps({**json.loads(job_to_json(FitJob())), "warp_drive": True})
    with pytest.raises(BamError, match=r"options this fit does not know \(warp_drive\)"):
        job_from_json(text, FitJob)
