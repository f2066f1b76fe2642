"""Distributed fits on a real PostgreSQL 16 server (the pgserver wheel), no mock database:
two workers sharing one study, three workers draining a campaign."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pgserver
import pytest
import sqlalchemy as sa

from bam_identify.campaign_cli import campaign_main
from bam_identify.data.legacy_logs import write_legacy_log
from bam_identify.data.synthetic import paper_like_set
from bam_sim.models.files.parameter_file import load, published_named
from bam_sim.models.servo.actuators import get_actuator

FIT = "from bam_identify.cli import fit_main; raise SystemExit(fit_main())"
WORK = "from bam_identify.campaign_cli import campaign_main; raise SystemExit(campaign_main())"

pytestmark = pytest.mark.heavy  # about a minute of worker processes: CI's last core
# One study's budget: about a hundred generations of M4's population, each cut in two shares
SHARED_TRIALS = 1500


@pytest.fixture(scope="module")
def postgres(tmp_path_factory):
    server = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    yield server
    server.cleanup()


@pytest.fixture
def database(postgres, request) -> str:
    """A new, empty database of the server, as a SQLAlchemy URL for psycopg 3."""
    name = re.sub(r"\W", "_", request.node.name).lower()[:48]
    postgres.psql(f"CREATE DATABASE {name};")
    return postgres.get_uri(name).replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("logs")
    for i, log in enumerate(paper_like_set(published_named("mx64", "m4"), 12, duration=3.0,
                                           arm_mass=0.1, seed=2)):
        write_legacy_log(folder / f"{i:03d}.json", log, get_actuator("mx64"),
                         log.meta["trajectory"])
    return folder


def _query(url: str, sql: str, **params) -> list:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(sql), params).all()
    engine.dispose()
    return rows


def _start(code: str, args: list) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    return out


def test_two_workers_share_every_generation_of_one_study(database, log_dir, tmp_path):
    """Both fit the same study at once: each generation is cut in two shares, each
    evaluated once, by either; both end on the set one worker alone finds with the same
    budget (the search is the same, only who evaluates a share differs)."""
    common = ["--logs", log_dir, "--models", "m4", "--trials", SHARED_TRIALS, "--seed", 1,
              "--quiet"]
    workers = [_start(FIT, [*common, "--storage", database, "--study", "shared",
                            "--workers", 2, "--output", tmp_path / f"w{i}" / "{model}.yaml",
                            "--report", tmp_path / f"w{i}" / "report"]) for i in (0, 1)]
    alone = _start(FIT, [*common, "--output", tmp_path / "alone" / "{model}.yaml",
                         "--report", tmp_path / "alone" / "report"])
    for process in (*workers, alone):
        _finish(process)
    results = [load(tmp_path / f"w{i}" / "m4.yaml") for i in (0, 1)]
    single = load(tmp_path / "alone" / "m4.yaml")
    for result in results:
        assert result.values == single.values
        assert result.provenance["train_mae"] == single.provenance["train_mae"]
    # Every candidate evaluated once: the two workers' own evaluations add up to the budget.
    here = [r.provenance["evaluated_here"] for r in results]
    assert sum(here) == SHARED_TRIALS and min(here) > 0
    # Both took shares of the generations, and the record holds every candidate once.
    shares = _query(database, "SELECT worker, count(*) FROM bam_fit_items WHERE study = "
                    "'shared' AND kind = 'cma' AND finished IS NOT NULL GROUP BY worker")
    assert len(shares) == 2 and all(count > 0 for _, count in shares)
    trials = _query(database, "SELECT s.study_name, t.number FROM trials t JOIN studies s "
                    "ON s.study_id = t.study_id WHERE s.study_name LIKE 'shared.r%'")
    assert len(trials) == SHARED_TRIALS and len(set(trials)) == SHARED_TRIALS


def test_three_workers_drain_a_campaign(database, log_dir, tmp_path, capsys):
    models = ["m1", "m2", "m3", "m4", "m5", "m6"]
    code = campaign_main(["add", "--storage", database, "--campaign", "bench", "--logs",
                          str(log_dir), "--models", *models, "--trials", "700", "--output",
                          str(tmp_path / "fits" / "{model}.yaml"), "--report",
                          str(tmp_path / "report"), "--quiet"])
    assert code == 0, capsys.readouterr().err
    workers = [_start(WORK, ["work", "--storage", database, "--campaign", "bench",
                             "--quiet"]) for _ in range(3)]
    said = [_finish(process) for process in workers]
    assert all("no job left" in text for text in said)
    jobs = _query(database, "SELECT number, model, state, worker FROM bam_fit_jobs WHERE "
                  "campaign = 'bench' ORDER BY number")
    assert [(j.model, j.state) for j in jobs] == [(m, "done") for m in models]
    assert len({j.worker for j in jobs}) >= 2  # the queue was shared
    for model in models:
        fitted = load(tmp_path / "fits" / f"{model}.yaml")
        # One worker ran each job, through to its end: it evaluated every candidate itself.
        assert fitted.provenance["evaluated_here"] == fitted.provenance["trials"] == 700
        assert fitted.provenance["study"] == f"bench_{model}"
        assert (tmp_path / "report" / model / "report.md").exists()
    assert load(tmp_path / "fits" / "m4.yaml").provenance["train_mae"] < 1e-3
    capsys.readouterr()
    assert campaign_main(["status", "--storage", database, "--campaign", "bench"]) == 0
    table = capsys.readouterr().out
    for number, model in enumerate(models):  # each row: its state and its fit's train MAE
        train = load(tmp_path / "fits" / f"{model}.yaml").provenance["train_mae"]
        assert re.search(rf"^\s*{number} {model}\s+done\s+\S+\s+{train:.3e}\s", table,
                         re.MULTILINE), table


def test_a_campaign_job_of_a_vanished_worker_is_run_again(database, log_dir, tmp_path):
    """A job left 'running' by a worker that died is claimed again and finished."""
    assert campaign_main(["add", "--storage", database, "--campaign", "crash", "--logs",
                          str(log_dir), "--models", "m1", "--trials", "200", "--output",
                          str(tmp_path / "{model}.yaml"), "--report", str(tmp_path / "r"),
                          "--quiet"]) == 0
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    import socket

    engine = sa.create_engine(database)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE bam_fit_jobs SET state = 'running', worker = :w, "
                             "claimed = 0 WHERE campaign = 'crash'"),
                     {"w": f"{socket.gethostname()}:{gone}:1"})
    engine.dispose()
    _finish(_start(WORK, ["work", "--storage", database, "--campaign", "crash", "--quiet"]))
    state = _query(database, "SELECT state FROM bam_fit_jobs WHERE campaign = 'crash'")
    assert state == [("done",)]
    assert load(tmp_path / "m1.yaml").provenance["trials"] == 200
