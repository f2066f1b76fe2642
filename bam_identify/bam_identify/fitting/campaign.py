"""A queue of fit jobs in a storage, drained by workers on any number of machines.

An identification campaign is many (actuator, model) fits. ``campaign add``
stores one job per model (the whole ``fit`` command, as a :class:`FitJob`,
with one model) in the table ``bam_fit_jobs`` of the same database as the
studies (SQLite, PostgreSQL); each ``campaign work`` process claims the next
waiting job, runs it, stores its outcome, and claims again until none is
left. The claim is one conditional UPDATE (``state = 'waiting'`` still true
when the row is written), so a job goes to exactly one worker however many
ask at once. A job is run with the campaign's storage, so its study is
recorded there: a job whose worker vanished (a dead process on this host, or
not seen for :data:`~bam_identify.fitting.study_record.STALE_SECONDS`) is
claimed again and resumes its study where it stopped.

A job handed back (SIGTERM, Ctrl-C) or left by a vanished worker may have
written part of its output: its report folder and its parameter file. The
worker that claims it again recognises them as the job's own and replaces
them (:func:`own_outputs`): the report folder by the marker :data:`MARKER`
written into it when the job first ran (naming the campaign, the job and its
study), the parameter file by its provenance (the job's study). Files that
are not the job's own are refused as ``fit`` refuses them, and the job fails
with that message.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import time
from pathlib import Path

from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_kind, writing

WAITING, RUNNING, DONE, FAILED = "waiting", "running", "done", "failed"


def job_to_json(job) -> str:
    """A FitJob as JSON: paths as strings, tuples as lists."""
    values = {}
    for item in dataclasses.fields(job):
        value = getattr(job, item.name)
        if isinstance(value, tuple):
            value = [str(v) if isinstance(v, Path) else v for v in value]
        elif isinstance(value, Path):
            value = str(value)
        values[item.name] = value
    return json.dumps(values, sort_keys=True)


def job_from_json(text: str, cls):
    """The FitJob ``cls`` from :func:`job_to_json`; fields it does not know are refused."""
    values = json.loads(text)
    known = {item.name: item for item in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise BamError(f"a campaign job holds options this fit does not know "
                       f"({', '.join(unknown)}): run the workers with the version that "
                       "added the jobs")
    for name, value in values.items():
        kind = str(known[name].type)
        if isinstance(value, list):
            value = tuple(Path(v) for v in value) if "Path" in kind else tuple(value)
        elif isinstance(value, str) and kind == "Path":
            value = Path(value)
        values[name] = value
    return cls(**values)


MARKER = "campaign_job.txt"  # in a job's report folder: the folder and what is in it are its


def job_marker(campaign: str, number: int, study: str) -> str:
    return f"campaign {campaign} job {number} (study {study}): written by its workers\n"


def own_outputs(job, campaign: str, number: int, outputs: list[str]):
    """``job`` allowed to replace its own earlier output, once none of someone else's is in
    the way (BamError, one line, naming it); its report folder then carries the marker.

    ``outputs``: the job's parameter file, a path or a pattern where the actuator is
    not known yet. ``job.force`` (given at ``campaign add``) replaces anything.
    """
    if job.force:
        return job
    marker = job_marker(campaign, number, job.study)
    report = Path(job.report)
    if report.is_dir() and any(report.iterdir()):
        mark = report / MARKER
        if not (mark.is_file() and mark.read_text(encoding="utf-8") == marker):
            raise BamError(f"report folder {report} is not empty and not this job's (no "
                           f"{MARKER} naming campaign {campaign} job {number}); move it away and "
                           "queue the job again (campaign add, another --campaign)")
    for pattern in outputs:
        for path in sorted(glob.glob(glob.escape(pattern).replace("[*]", "*"))):
            if _study_of(Path(path)) != job.study:
                raise BamError(f"{path} already exists and is not the output of campaign "
                               f"{campaign} job {number} (study {job.study}); move it away and "
                               "queue the job again (campaign add, another --campaign)")
    check_kind(report, "--report", folder=True)  # a device, a pipe: refused
    with writing(report / MARKER, "--report"):
        report.mkdir(parents=True, exist_ok=True)
        (report / MARKER).write_text(marker, encoding="utf-8")
    return dataclasses.replace(job, force=True)


def _study_of(path: Path) -> str | None:
    """The study a parameter file was fitted in (its provenance), None if not one."""
    from bam_sim.models.files.parameter_file import load

    if not path.is_file():  # a pipe or a device is nobody's output (and reading one waits)
        return None
    try:
        return load(path).provenance.get("study")
    except (BamError, OSError):
        return None


class Campaign:
    """The jobs of campaign ``name`` in the database at ``url``."""

    def __init__(self, url: str, name: str, create: bool = False):
        """``create``: the database may be new (``campaign add``); else a SQLite file that
        does not exist is a mistyped path, refused rather than created empty."""
        import sqlalchemy as sa

        from bam_identify.fitting.study_record import (
            WORKER,
            fit_tables,
            open_storage,
        )

        if not create:
            where = sa.engine.make_url(url)
            if where.get_backend_name() == "sqlite" and where.database \
                    and not where.database.startswith(("file:", ":memory:")) \
                    and not Path(where.database).exists():
                raise BamError(f"no database at {where.database}: give the --storage that "
                               "'campaign add' queued the jobs in")
        self.sa, self.name, self.url = sa, name, url
        # The studies' own storage: its schema, its engine, the same one-line errors.
        self.storage = open_storage(url)
        self.engine = self.storage.engine
        self.jobs = fit_tables()[0].tables["bam_fit_jobs"]
        # The fits of this process sign their claims and heartbeats with the same name, so
        # a job stays this worker's while its fit runs.
        self.worker = WORKER

    def add(self, jobs: list[tuple[str, str]]) -> list[int]:
        """Queue (model, job JSON) pairs after the campaign's jobs; their numbers."""
        sa, table = self.sa, self.jobs
        with self.engine.begin() as conn:
            last = conn.execute(sa.select(sa.func.max(table.c.number))
                                .where(table.c.campaign == self.name)).scalar()
            start = 0 if last is None else last + 1
            rows = [{"campaign": self.name, "number": start + i, "model": model, "job": job,
                     "state": WAITING} for i, (model, job) in enumerate(jobs)]
            if rows:
                conn.execute(sa.insert(table), rows)
        return [row["number"] for row in rows]

    def all_jobs(self) -> list[tuple[str, int, str]]:
        """(campaign, number, job JSON) of every job in the storage, of any campaign."""
        sa, table = self.sa, self.jobs
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(table.c.campaign, table.c.number, table.c.job)
                                    .order_by(table.c.campaign, table.c.number)).all()
        except sa.exc.SQLAlchemyError:  # a new database: no job table yet
            return []
        return [tuple(row) for row in rows]

    def claim(self) -> tuple[int, str] | None:
        """The next job for this worker (number, job JSON), or None when none is left:
        waiting ones first, then running ones whose worker vanished."""
        from bam_identify.fitting.study_record import vanished

        sa, table = self.sa, self.jobs
        while True:
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(table.c.number, table.c.state, table.c.worker,
                                              table.c.claimed)
                                    .where(table.c.campaign == self.name,
                                           table.c.state.in_((WAITING, RUNNING)))
                                    .order_by(table.c.number)).all()
                seen = self._seen(conn)
            now = time.time()
            free = [r for r in rows if r.state == WAITING] + [
                r for r in rows if r.state == RUNNING and r.worker != self.worker
                and vanished(r.worker, seen.get(r.worker, r.claimed), now)]
            if not free:
                return None
            row = free[0]
            with self.engine.begin() as conn:
                taken = conn.execute(sa.update(table).where(
                    table.c.campaign == self.name, table.c.number == row.number,
                    table.c.state == row.state,
                    (table.c.worker == row.worker) if row.worker else table.c.worker.is_(None))
                    .values(state=RUNNING, worker=self.worker, claimed=now)).rowcount
                if taken:
                    job = conn.execute(sa.select(table.c.job).where(
                        table.c.campaign == self.name, table.c.number == row.number)).scalar()
                    self._heartbeat(conn)
                    return row.number, job
            # Another worker took it between the read and the write: look again.

    def _seen(self, conn) -> dict[str, float]:
        from bam_identify.fitting.study_record import worker_table

        workers = worker_table(self.sa)
        try:
            return dict(conn.execute(self.sa.select(workers.c.worker, workers.c.seen)).all())
        except self.sa.exc.SQLAlchemyError:  # no fit has recorded a worker yet
            return {}

    def _heartbeat(self, conn) -> None:
        from bam_identify.fitting.study_record import heartbeat

        heartbeat(self.sa, conn, self.worker, self.engine.dialect.name)

    def finish(self, number: int, state: str, result: dict) -> None:
        sa, table = self.sa, self.jobs
        with self.engine.begin() as conn:
            conn.execute(sa.update(table).where(
                table.c.campaign == self.name, table.c.number == number,
                table.c.worker == self.worker).values(
                state=state, finished=time.time(), result=json.dumps(result)))

    def release(self, number: int) -> None:
        """Give a job back (its worker was interrupted): waiting again, study kept."""
        sa, table = self.sa, self.jobs
        with self.engine.begin() as conn:
            conn.execute(sa.update(table).where(
                table.c.campaign == self.name, table.c.number == number,
                table.c.worker == self.worker).values(state=WAITING, worker=None,
                                                       claimed=None))

    def require_jobs(self) -> None:
        """A campaign without any job is a mistyped name: a one-line BamError."""
        sa, table = self.sa, self.jobs
        with self.engine.connect() as conn:
            count = conn.execute(sa.select(sa.func.count()).where(
                table.c.campaign == self.name)).scalar()
        if not count:
            raise BamError(f"campaign {self.name} has no job in {self.url}: queue some with "
                           "'campaign add', or check the name")

    def status(self) -> list[dict]:
        sa, table = self.sa, self.jobs
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(table).where(table.c.campaign == self.name)
                                .order_by(table.c.number)).mappings().all()
        return [dict(row) for row in rows]

    def close(self) -> None:
        self.engine.dispose()
