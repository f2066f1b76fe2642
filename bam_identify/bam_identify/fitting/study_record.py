"""The record of a fit in an optuna RDB storage: trials, generations, shares of work.

A fit with ``--storage`` (SQLite, PostgreSQL) keeps two things there:

* every evaluated candidate as a COMPLETE trial of the optuna study
  ``<study>.r<k>`` (restart k), numbered g·λ + i (generation g, candidate i):
  the record optuna's tools read (``optuna.load_study``, optuna-dashboard);
* one row per share of a generation in ``bam_fit_items``: who claimed it,
  when it finished, and the scores of its candidates. A resumed fit replays
  the stored scores through the same seeded CMA-ES (:mod:`cma_run`), so it
  continues exactly where the stored one stopped; several workers on one
  study each claim shares of the same generations, so no candidate is
  evaluated twice (the row's primary key is the claim).

Both are written in bulk, one transaction per lease of generations (single
worker: about every half second; cooperating workers: once per share), with
SQLAlchemy Core on optuna's own engine and tables. optuna's per-trial API
(``Study.tell``, ``add_trials``) costs about 10 ms a trial in SQLite, ten
times the simulation of a candidate; the bulk insert writes the same rows.
optuna is pinned (requirements.lock) and its schema version checked; the
tests read the record back through optuna's public API.

A fit without ``--storage`` records nothing and imports neither optuna nor
SQLAlchemy (:class:`MemoryRecord`).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import math
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_kind, check_length

SCHEMA_VERSION = 12  # optuna's RDB schema the bulk writes follow (optuna 5.0)
LEASE_SECONDS = 0.5  # a single worker claims about this much work per transaction
STALE_SECONDS = 60.0  # a claim unfinished this long after its worker was last seen is free
POLL_SECONDS = 0.01  # a worker waiting for another's share reads the storage this often
RECLAIM_SECONDS = 1.0  # ... and looks for shares to take over this often
SCHEMA_LOCK = 0x62616D  # PostgreSQL advisory lock key of the schema's creation ("bam")
# This process, as it signs its claims (host and pid tell a dead local process apart).
WORKER = f"{socket.gethostname()}:{os.getpid()}:{time.time_ns() % 10**9}"


def shares_of(popsize: int, shares: int) -> list[np.ndarray]:
    """The candidate indices of each share of a generation (near-equal, in order)."""
    return np.array_split(np.arange(popsize), min(shares, popsize))


@dataclass
class Pending:
    """Scores of one share, not yet written."""

    run: int
    generation: int
    share: int
    numbers: np.ndarray  # optuna trial numbers g·λ + i
    values: np.ndarray  # (m, dims) parameter values of the candidates
    scores: np.ndarray  # (share size,) NaN where not evaluated (the budget ended)


@dataclass
class MemoryRecord:
    """No storage: nothing is kept, every share is this process's."""

    shares: int = 1

    def generations(self, run: int, popsize: int) -> dict[int, np.ndarray]:
        return {}

    def work(self, run: int, generation: int, popsize: int, limit: int) -> list[int]:
        return list(range(len(shares_of(popsize, self.shares))))

    def finish(self, item: Pending) -> None:
        pass

    def scores(self, run: int, generation: int, popsize: int) -> np.ndarray:
        raise AssertionError("a fit without storage never waits for another worker")

    def claim_polish(self, run: int, generation: int) -> bool:
        return True

    def polish_result(self, run: int, generation: int) -> dict | None:
        return None

    def finish_polish(self, run: int, generation: int, result: dict, values: np.ndarray,
                      scores: np.ndarray) -> None:
        pass

    def close(self) -> None:
        pass


def open_record(storage: str | None, study: str | None, fingerprint: dict,
                names: list[str], bounds: list[tuple[float, float]],
                shares: int | None) -> MemoryRecord | StudyRecord:
    if storage is None:
        return MemoryRecord()
    return StudyRecord(storage, study or "bam_fit", fingerprint, names, bounds, shares)


def fit_tables():
    import sqlalchemy as sa

    meta = sa.MetaData()
    studies = sa.Table(
        "bam_fit_studies", meta,
        sa.Column("name", sa.String(512), primary_key=True),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("shares", sa.Integer, nullable=False))
    items = sa.Table(
        "bam_fit_items", meta,
        sa.Column("study", sa.String(512), primary_key=True),
        sa.Column("kind", sa.String(8), primary_key=True),  # "cma": a generation's share
        sa.Column("run", sa.Integer, primary_key=True),
        sa.Column("generation", sa.Integer, primary_key=True),
        sa.Column("share", sa.Integer, primary_key=True),
        sa.Column("worker", sa.String(256), nullable=False),
        sa.Column("claimed", sa.Float, nullable=False),
        sa.Column("finished", sa.Float, nullable=True),
        sa.Column("complete", sa.Boolean, nullable=False),
        sa.Column("result", sa.Text, nullable=True))  # JSON: the scores, null = not run
    sa.Table(
        "bam_fit_jobs", meta,  # the campaigns' queues (bam_identify.fitting.campaign)
        sa.Column("campaign", sa.String(512), primary_key=True),
        sa.Column("number", sa.Integer, primary_key=True),
        sa.Column("model", sa.String(64), nullable=False),
        sa.Column("job", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("worker", sa.String(256), nullable=True),
        sa.Column("claimed", sa.Float, nullable=True),
        sa.Column("finished", sa.Float, nullable=True),
        sa.Column("result", sa.Text, nullable=True))
    return meta, studies, items, worker_table(sa, meta)


def worker_table(sa, meta=None):
    """``bam_fit_workers``: when each worker process was last seen."""
    return sa.Table("bam_fit_workers", meta if meta is not None else sa.MetaData(),
                    sa.Column("worker", sa.String(256), primary_key=True),
                    sa.Column("seen", sa.Float, nullable=False))


def insert_ignore(conn, table, rows: list[dict], dialect: str) -> None:
    """INSERT, skipping rows whose key exists (the atomic claim)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    conn.execute(insert(table).on_conflict_do_nothing(), rows)


def heartbeat(sa, conn, worker: str, dialect: str) -> None:
    """Note that ``worker`` is alive now."""
    workers = worker_table(sa)
    if not conn.execute(sa.update(workers).where(workers.c.worker == worker)
                        .values(seen=time.time())).rowcount:
        insert_ignore(conn, workers, [{"worker": worker, "seen": time.time()}], dialect)


def storage_url(text: str) -> str:
    """``text`` as a storage URL a shared study can live in, else a one-line BamError.

    The one check of ``--storage`` (fit, campaign add/work/status), run as the
    option is parsed: a URL SQLAlchemy can read, of SQLite or PostgreSQL, and a
    database that outlives the process (SQLite in memory would keep the study
    only as long as this fit, and no other worker could see it).
    """
    import sqlalchemy as sa

    example = "sqlite:///fit.db or postgresql+psycopg://user@host/db"
    try:
        where = sa.engine.make_url(text.strip())
    except Exception:  # noqa: BLE001 - SQLAlchemy's ArgumentError, ValueError
        raise BamError(f"storage '{text}' is not a database URL; write one like "
                       f"{example}") from None
    backend = where.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise BamError(f"storage '{text}': the fit records into SQLite or PostgreSQL, not "
                       f"'{backend}' ({example})")
    database = where.database or ""
    memory = (backend == "sqlite" and (database in ("", ":memory:") or "mode=memory" in database
                                       or where.query.get("mode") == "memory"))
    if memory:
        raise BamError(f"storage '{text}' keeps the study in memory only, lost when this "
                       "process ends and seen by no other worker; give a file "
                       "(sqlite:///fit.db) or a server (postgresql+psycopg://user@host/db)")
    if backend == "sqlite" and not database.startswith("file:"):
        check_length(Path(database).expanduser(), f"storage '{text[:60]}'")
        _check_sqlite_file(Path(database).expanduser(), text)
    return text.strip()


def _check_sqlite_file(path: Path, text: str) -> None:
    """An existing SQLite file must hold nothing but optuna's and the fit's tables (and be
    a regular file: a named pipe would hold the fit forever, a device is nobody's)."""
    if path.is_dir():
        raise BamError(f"storage '{text}': {path} is a folder; name a database file")
    check_kind(path, f"storage '{text}':")
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb") as handle:
        if handle.read(16) != b"SQLite format 3\x00":
            raise BamError(f"storage '{text}': {path} is not a SQLite database; name a "
                           "new file or one a fit created")
    foreign = sorted(set(_sqlite_tables(path, text)) - _own_tables())
    if foreign:
        raise BamError(f"storage '{text}': {path} holds tables of another program "
                       f"({', '.join(foreign[:5])}); give the fit a database of its own")


def _sqlite_tables(path: Path, text: str) -> list[str]:
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            return [name for (name,) in rows if not name.startswith("sqlite_")]
    except sqlite3.Error as exc:
        raise BamError(f"storage '{text}': cannot read {path} ({exc}); name a new file "
                       "or one a fit created") from None


def _own_tables() -> frozenset[str]:
    """optuna's tables (of its pinned schema) and the fit's."""
    from optuna.storages._rdb import models

    return (frozenset(models.BaseModel.metadata.tables) | frozenset(fit_tables()[0].tables)
            | {"alembic_version"})


def open_storage(url: str):
    """optuna's RDB storage at ``url``, its tables and the fit's created, or a one-line
    BamError.

    Workers started together on a new database would create the schema at
    once (PostgreSQL then refuses the second enum type of the same name): on
    PostgreSQL an advisory lock lets one create it while the others wait, on
    SQLite a lock of the database file (:func:`_schema_lock`). PostgreSQL
    sessions do not wait for the disk at each commit (``synchronous_commit =
    off``): a crash may lose the last few writes of the record, which a
    resumed fit evaluates again, never a half-written one.
    """
    import optuna
    from optuna.storages._rdb import models

    url = storage_url(url)  # the same check as the option's, for jobs built in code
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if models.SCHEMA_VERSION != SCHEMA_VERSION:
        raise BamError(f"the fit writes optuna's storage schema {SCHEMA_VERSION}, this "
                       f"optuna {optuna.__version__} has {models.SCHEMA_VERSION}: install "
                       "the pinned optuna (requirements.lock)")
    postgres = url.startswith(("postgresql", "postgres"))
    engine_kwargs = ({"connect_args": {"options": "-c synchronous_commit=off"}}
                     if postgres else {})
    try:
        with _schema_lock(url, postgres):
            storage = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
            if storage.engine.dialect.name not in ("sqlite", "postgresql"):
                raise BamError(f"--storage {url}: the fit records into SQLite or "
                               f"PostgreSQL, not {storage.engine.dialect.name}")
            fit_tables()[0].create_all(storage.engine, checkfirst=True)
    except BamError:
        raise
    except Exception as exc:  # noqa: BLE001 - optuna, SQLAlchemy, a driver or the file system
        raise BamError(f"cannot open the optuna storage '{url}': {_first_line(exc)}") from None
    return storage


@contextlib.contextmanager
def _schema_lock(url: str, postgres: bool):
    """While the schema is created: on PostgreSQL a session-level advisory lock, on a
    SQLite file an exclusive flock of the file itself (SQLite's own locks are POSIX
    record locks, which flock does not touch)."""
    if postgres:
        with _advisory_lock(url):
            yield
        return
    import sqlalchemy as sa

    where = sa.engine.make_url(url)
    database = where.database
    if where.get_backend_name() != "sqlite" or not database or database == ":memory:" \
            or database.startswith("file:"):
        yield
        return
    with open(database, "ab") as handle:  # an empty file is an empty SQLite database
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _advisory_lock(url: str):
    import sqlalchemy as sa

    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK})
            try:
                yield
            finally:
                conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK})
    finally:
        engine.dispose()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class StudyRecord:
    """A fit's record in an optuna RDB storage (see the module docstring)."""

    def __init__(self, url: str, name: str, fingerprint: dict, names: list[str],
                 bounds: list[tuple[float, float]], shares: int | None):
        import sqlalchemy as sa

        self.storage = open_storage(url)
        self.sa = sa
        self.engine = self.storage.engine
        self.meta, self.studies, self.items, self.workers = fit_tables()
        self.url, self.name = url, name
        self.worker = WORKER
        self.names = names
        self.distributions = [json.dumps({"name": "FloatDistribution", "attributes": {
            "log": False, "step": None, "low": lo, "high": hi}}) for lo, hi in bounds]
        self.shares = self._open_study(fingerprint, shares)
        self.study_ids: dict[str, int] = {}
        self.mine: dict[tuple[int, int], list[int]] = {}  # (run, generation) -> my shares
        # (run, generation, share) taken over after a budget cut it short -> which of its
        # candidates the record holds as trials already
        self.written: dict[tuple[int, int, int], list[bool]] = {}
        self.pending: list[Pending] = []
        self.lease = 1
        self.lease_started = time.perf_counter()

    # -- the study row: what the fit was started with --------------------------------------

    def _open_study(self, fingerprint: dict, shares: int | None) -> int:
        sa = self.sa
        text = json.dumps(fingerprint, sort_keys=True)
        with self.engine.begin() as conn:
            self._insert_ignore(conn, self.studies, [
                {"name": self.name, "fingerprint": text, "shares": shares or 1}])
            row = conn.execute(sa.select(self.studies.c.fingerprint, self.studies.c.shares)
                               .where(self.studies.c.name == self.name)).one()
        if row.fingerprint != text:
            stored = json.loads(row.fingerprint)
            differ = sorted(k for k in set(stored) | set(fingerprint)
                            if stored.get(k) != fingerprint.get(k))
            raise BamError(f"study '{self.name}' in {self.url} was started with other "
                           f"{', '.join(differ)}; repeat its command or choose another --study")
        return int(row.shares)

    def _insert_ignore(self, conn, table, rows: list[dict]) -> None:
        insert_ignore(conn, table, rows, self.engine.dialect.name)

    def _study_id(self, run: int, suffix: str = "") -> int:
        """The optuna study of run ``run`` (``suffix`` ".lm<g>": of one of its polishes)."""
        name = f"{self.name}.r{run}{suffix}"
        if name not in self.study_ids:
            import optuna

            optuna.create_study(storage=self.storage, study_name=name,
                                direction="minimize", load_if_exists=True)
            self.study_ids[name] = self.storage.get_study_id_from_name(name)
        return self.study_ids[name]

    # -- reading ----------------------------------------------------------------------------

    def generations(self, run: int, popsize: int) -> dict[int, np.ndarray]:
        """Stored scores of run ``run`` (``popsize`` candidates a generation): generation ->
        its scores, NaN where not evaluated or its share is not finished yet."""
        sa, items = self.sa, self.items
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(items.c.generation, items.c.share, items.c.result)
                                .where(items.c.study == self.name, items.c.kind == "cma",
                                       items.c.run == run, items.c.finished.is_not(None))
                                ).all()
        finished: dict[int, list[tuple[int, str]]] = {}
        for generation, share, result in rows:
            finished.setdefault(generation, []).append((share, result))
        return {g: self._scatter(shares, popsize) for g, shares in finished.items()}

    def _scatter(self, shares: list[tuple[int, str]], popsize: int) -> np.ndarray:
        """A generation's scores from its finished (share, result JSON) pairs: NaN where
        a share is missing or a candidate was not evaluated."""
        index = shares_of(popsize, self.shares)
        out = np.full(popsize, np.nan)
        for share, result in shares:
            out[index[share]] = [np.nan if s is None else s for s in json.loads(result)]
        return out

    # -- claiming ---------------------------------------------------------------------------

    def work(self, run: int, generation: int, popsize: int, limit: int) -> list[int]:
        """Shares of (run, generation) this worker is to evaluate now, of which the first
        ``limit`` candidates are wanted; [] when every share is taken (then read
        :meth:`scores` until the others finish).

        One worker alone leases several generations per transaction (about
        LEASE_SECONDS of work); cooperating workers claim one share at a time.
        A share whose worker vanished (a dead process on this host, or not seen
        for STALE_SECONDS) and a share an earlier budget cut short before
        ``limit`` are claimed again.
        """
        key = (run, generation)
        if key in self.mine:
            return self.mine.pop(key)
        self._study_id(run)  # created before the transaction: SQLite has one writer
        n_shares = len(shares_of(popsize, self.shares))
        with self.engine.begin() as conn:
            self._write_pending(conn)
            self._heartbeat(conn)
            self._reclaim(conn, run, generation, shares_of(popsize, self.shares), limit)
            if n_shares == 1:
                self._adapt_lease()
                self._insert_ignore(conn, self.items, [
                    self._claim_row(run, g, 0)
                    for g in range(generation, generation + self.lease)])
            elif not any(g == generation for g, _ in self._my_unfinished(conn, run, generation)):
                for share in range(n_shares):
                    self._insert_ignore(conn, self.items, [self._claim_row(run, generation,
                                                                           share)])
                    if self._is_mine(conn, run, generation, share):
                        break  # one share at a time: the others take theirs meanwhile
            mine = self._my_unfinished(conn, run, generation)
        for g, share in mine:
            self.mine.setdefault((run, g), []).append(share)
        return self.mine.pop(key, [])

    def _claim_row(self, run: int, generation: int, share: int, kind: str = "cma") -> dict:
        return {"study": self.name, "kind": kind, "run": run, "generation": generation,
                "share": share, "worker": self.worker, "claimed": time.time(),
                "finished": None, "complete": False, "result": None}

    def _adapt_lease(self) -> None:
        elapsed = time.perf_counter() - self.lease_started
        self.lease_started = time.perf_counter()
        if elapsed > 0.0:
            self.lease = int(min(256, max(1, round(self.lease * LEASE_SECONDS / elapsed))))

    def _is_mine(self, conn, run: int, generation: int, share: int) -> bool:
        items = self.items
        worker = conn.execute(self.sa.select(items.c.worker).where(
            *self._key(run, generation), items.c.share == share,
            items.c.finished.is_(None))).scalar()
        return worker == self.worker

    def _key(self, run: int, generation: int | None = None, kind: str = "cma") -> list:
        items = self.items
        key = [items.c.study == self.name, items.c.kind == kind, items.c.run == run]
        if generation is not None:
            key.append(items.c.generation == generation)
        return key

    def _my_unfinished(self, conn, run: int, generation: int) -> list[tuple[int, int]]:
        items = self.items
        rows = conn.execute(self.sa.select(items.c.generation, items.c.share).where(
            *self._key(run), items.c.generation >= generation, items.c.worker == self.worker,
            items.c.finished.is_(None)).order_by(items.c.generation, items.c.share)).all()
        return [(int(g), int(s)) for g, s in rows]

    def _reclaim(self, conn, run: int, generation: int, index: list[np.ndarray] | None = None,
                 limit: int = 0, kind: str = "cma") -> None:
        """Take over the shares of ``generation`` nobody will finish (compare-and-set):
        one an earlier budget cut short before candidate ``limit`` (a resumed fit has
        more; ``index``: the candidates of each share), or one whose worker vanished."""
        sa, items, workers = self.sa, self.items, self.workers
        rows = conn.execute(
            sa.select(items.c.share, items.c.worker, items.c.finished, items.c.complete,
                      items.c.result, workers.c.seen)
            .select_from(items.outerjoin(workers, workers.c.worker == items.c.worker))
            .where(*self._key(run, generation, kind))).all()
        now = time.time()
        for share, worker, finished, complete, result, seen in rows:
            stored = json.loads(result) if result else []
            cut_short = finished is not None and not complete and index is not None and any(
                s is None and i < limit for i, s in zip(index[share], stored, strict=True))
            gone = finished is None and worker != self.worker and vanished(worker, seen, now)
            if not (cut_short or gone):
                continue
            taken = conn.execute(sa.update(items).where(
                *self._key(run, generation, kind), items.c.share == share,
                items.c.worker == worker,
                items.c.finished.is_(None) if finished is None
                else items.c.finished == finished).values(
                worker=self.worker, claimed=now, finished=None)).rowcount
            if taken and cut_short:  # its evaluated candidates are trials already
                self.written[(run, generation, share)] = [s is not None for s in stored]

    def _heartbeat(self, conn) -> None:
        heartbeat(self.sa, conn, self.worker, self.engine.dialect.name)

    # -- Levenberg–Marquardt runs: one item each, claimed by one worker ----------------------

    def claim_polish(self, run: int, generation: int) -> bool:
        """Whether this worker runs the polish after (run, generation) (else another does,
        or did: read :meth:`polish_result`)."""
        with self.engine.begin() as conn:
            self._write_pending(conn)
            self._heartbeat(conn)
            self._reclaim(conn, run, generation, kind="lm")
            self._insert_ignore(conn, self.items, [self._claim_row(run, generation, 0, "lm")])
            worker = conn.execute(self.sa.select(self.items.c.worker).where(
                *self._key(run, generation, "lm"), self.items.c.finished.is_(None))).scalar()
        return worker == self.worker

    def polish_result(self, run: int, generation: int) -> dict | None:
        items = self.items
        with self.engine.connect() as conn:
            result = conn.execute(self.sa.select(items.c.result).where(
                *self._key(run, generation, "lm"), items.c.finished.is_not(None))).scalar()
        return None if result is None else json.loads(result)

    def finish_polish(self, run: int, generation: int, result: dict, values: np.ndarray,
                      scores: np.ndarray) -> None:
        """The outcome of a polish, with its evaluations as the trials of the optuna study
        ``<study>.r<run>.lm<generation>``."""
        sa, items = self.sa, self.items
        study = self._study_id(run, f".lm{generation}")
        with self.engine.begin() as conn:
            self._write_pending(conn)
            ok = conn.execute(sa.update(items).where(
                *self._key(run, generation, "lm"), items.c.worker == self.worker,
                items.c.finished.is_(None)).values(
                finished=time.time(), complete=True, result=json.dumps(result))).rowcount
            if ok:
                self._insert_trials(conn, study, np.arange(len(scores)), values, scores)

    # -- writing ----------------------------------------------------------------------------

    def finish(self, item: Pending) -> None:
        """Keep one share's scores; written with the next claim (or at once when others
        wait for it)."""
        self.pending.append(item)
        if self.shares > 1:
            with self.engine.begin() as conn:
                self._write_pending(conn)

    def _write_pending(self, conn) -> None:
        if not self.pending:
            return
        sa, items = self.sa, self.items
        now = time.time()
        written = []
        for item in self.pending:
            evaluated = np.isfinite(item.scores)
            result = json.dumps([None if not math.isfinite(s) else float(s)
                                 for s in item.scores])
            ok = conn.execute(sa.update(items).where(
                *self._key(item.run, item.generation), items.c.share == item.share,
                items.c.worker == self.worker, items.c.finished.is_(None)).values(
                finished=now, complete=bool(evaluated.all()), result=result)).rowcount
            if ok:  # else another worker took the share over: its trials are the record
                written.append(item)
        for item in written:
            new = ~np.array(self.written.pop((item.run, item.generation, item.share),
                                             [False] * len(item.scores)))
            self._insert_trials(conn, self._study_id(item.run), item.numbers[new],
                                item.values[new], item.scores[new])
        self.pending.clear()

    def _insert_trials(self, conn, study_id: int, numbers: np.ndarray, values: np.ndarray,
                       scores: np.ndarray) -> None:
        """Candidates as COMPLETE optuna trials (NaN scores: not evaluated, left out), in
        three bulk inserts."""
        from optuna.storages._rdb import models
        from optuna.trial import TrialState

        sa = self.sa
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        trials = [({"number": int(number), "study_id": study_id, "state": TrialState.COMPLETE,
                    "datetime_start": now, "datetime_complete": now}, x, float(score))
                  for number, x, score in zip(numbers, values, scores, strict=True)
                  if math.isfinite(score)]
        params, rows = [], []
        if not trials:
            return
        table = models.TrialModel.__table__
        ids = conn.execute(sa.insert(table).returning(table.c.trial_id,
                                                      sort_by_parameter_order=True),
                           [row for row, _, _ in trials]).scalars().all()
        finite = models.TrialValueModel.TrialValueType.FINITE
        for trial_id, (_, x, score) in zip(ids, trials, strict=True):
            params.extend({"trial_id": trial_id, "param_name": name, "param_value": float(v),
                           "distribution_json": dist}
                          for name, v, dist in zip(self.names, x, self.distributions,
                                                   strict=True))
            rows.append({"trial_id": trial_id, "objective": 0, "value": score,
                         "value_type": finite})
        conn.execute(sa.insert(models.TrialParamModel.__table__), params)
        conn.execute(sa.insert(models.TrialValueModel.__table__), rows)

    # -- waiting for the others -------------------------------------------------------------

    def scores(self, run: int, generation: int, popsize: int) -> np.ndarray:
        """The stored scores of a generation: NaN where its share is not finished yet (or
        the candidate was not evaluated)."""
        sa, items = self.sa, self.items
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(items.c.share, items.c.result).where(
                *self._key(run, generation), items.c.finished.is_not(None))).all()
        return self._scatter(rows, popsize)

    def close(self) -> None:
        """Write what is pending and give back the leased generations not started."""
        sa, items = self.sa, self.items
        with self.engine.begin() as conn:
            self._write_pending(conn)
            conn.execute(sa.delete(items).where(
                items.c.study == self.name, items.c.worker == self.worker,
                items.c.finished.is_(None)))
        self.engine.dispose()


def vanished(worker: str, seen: float | None, now: float) -> bool:
    """A worker that will not finish its claim: on this host, a process that is gone;
    elsewhere, one not seen for STALE_SECONDS."""
    host, _, rest = worker.partition(":")
    pid = rest.partition(":")[0]
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    return seen is None or now - seen > STALE_SECONDS
