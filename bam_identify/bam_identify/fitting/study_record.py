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

import datetime
import json
import math
import os
import socket
import time
from dataclasses import dataclass

import numpy as np

from bam_sim.common.errors import BamError

SCHEMA_VERSION = 12  # optuna's RDB schema the bulk writes follow (optuna 5.0)
LEASE_SECONDS = 0.5  # a single worker claims about this much work per transaction
STALE_SECONDS = 60.0  # a claim unfinished this long after its worker was last seen is free
POLL_SECONDS = 0.01  # a worker waiting for another's share reads the storage this often


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

    def generations(self, run: int) -> dict[int, np.ndarray]:
        return {}

    def work(self, run: int, generation: int, popsize: int) -> list[int]:
        return list(range(len(shares_of(popsize, self.shares))))

    def finish(self, item: Pending) -> None:
        pass

    def scores(self, run: int, generation: int, popsize: int) -> np.ndarray | None:
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


def _tables():
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
    workers = sa.Table(
        "bam_fit_workers", meta,
        sa.Column("worker", sa.String(256), primary_key=True),
        sa.Column("seen", sa.Float, nullable=False))
    return meta, studies, items, workers


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class StudyRecord:
    """A fit's record in an optuna RDB storage (see the module docstring)."""

    def __init__(self, url: str, name: str, fingerprint: dict, names: list[str],
                 bounds: list[tuple[float, float]], shares: int | None):
        import optuna
        import sqlalchemy as sa

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        try:
            self.storage = optuna.storages.RDBStorage(url)
        except Exception as exc:  # noqa: BLE001 - optuna, SQLAlchemy or a driver: "cannot open"
            raise BamError(f"cannot open the optuna storage '{url}': {_first_line(exc)}") from None
        if self.storage.engine.dialect.name not in ("sqlite", "postgresql"):
            raise BamError(f"--storage {url}: the fit records into SQLite or PostgreSQL, "
                           f"not {self.storage.engine.dialect.name}")
        from optuna.storages._rdb import models

        if models.SCHEMA_VERSION != SCHEMA_VERSION:
            raise BamError(f"the fit writes optuna's storage schema {SCHEMA_VERSION}, this "
                           f"optuna {optuna.__version__} has {models.SCHEMA_VERSION}: install "
                           "the pinned optuna (requirements.lock)")
        self.sa = sa
        self.engine = self.storage.engine
        self.meta, self.studies, self.items, self.workers = _tables()
        self.meta.create_all(self.engine, checkfirst=True)
        self.url, self.name = url, name
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{time.time_ns() % 10**9}"
        self.names = names
        self.distributions = [json.dumps({"name": "FloatDistribution", "attributes": {
            "log": False, "step": None, "low": lo, "high": hi}}) for lo, hi in bounds]
        self.shares = self._open_study(fingerprint, shares)
        self.study_ids: dict[str, int] = {}
        self.mine: dict[tuple[int, int], list[int]] = {}  # (run, generation) -> my shares
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
        """INSERT, skipping rows whose key exists (the atomic claim)."""
        if self.engine.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        conn.execute(insert(table).on_conflict_do_nothing(), rows)

    def _study_id(self, run: int, suffix: str = "") -> int:
        """The optuna study of run ``run`` (``suffix`` ".lm<g>": of one of its polishes)."""
        name = f"{self.name}.r{run}{suffix}"
        if name not in self.study_ids:
            import optuna

            optuna.create_study(storage=self.storage, study_name=name, direction="minimize",
                                load_if_exists=True)
            self.study_ids[name] = self.storage.get_study_id_from_name(name)
        return self.study_ids[name]

    # -- reading ----------------------------------------------------------------------------

    def generations(self, run: int) -> dict[int, np.ndarray]:
        """Stored scores of run ``run``: generation -> flat scores (NaN: not evaluated)."""
        sa, items = self.sa, self.items
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(items.c.generation, items.c.share, items.c.result)
                                .where(items.c.study == self.name, items.c.kind == "cma",
                                       items.c.run == run, items.c.finished.is_not(None))
                                .order_by(items.c.generation, items.c.share)).all()
        out: dict[int, list] = {}
        for generation, _share, result in rows:
            out.setdefault(generation, []).extend(
                np.nan if s is None else s for s in json.loads(result))
        return {g: np.array(scores, dtype=float) for g, scores in out.items()}

    # -- claiming ---------------------------------------------------------------------------

    def work(self, run: int, generation: int, popsize: int) -> list[int]:
        """Shares of (run, generation) this worker is to evaluate now; [] when every share
        is taken (then read :meth:`scores` until the others finish).

        One worker alone leases several generations per transaction (about
        LEASE_SECONDS of work); cooperating workers claim one share at a time.
        A share whose worker vanished (a dead process on this host, or not seen
        for STALE_SECONDS) and a share the budget cut short are claimed again.
        """
        key = (run, generation)
        if key in self.mine:
            return self.mine.pop(key)
        self._study_id(run)  # created before the transaction: SQLite has one writer
        n_shares = len(shares_of(popsize, self.shares))
        with self.engine.begin() as conn:
            self._write_pending(conn)
            self._heartbeat(conn)
            self._reclaim(conn, run, generation)
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

    def _reclaim(self, conn, run: int, generation: int, kind: str = "cma") -> None:
        """Take over the shares of ``generation`` nobody will finish (compare-and-set)."""
        sa, items, workers = self.sa, self.items, self.workers
        rows = conn.execute(
            sa.select(items.c.share, items.c.worker, items.c.finished, items.c.complete,
                      workers.c.seen)
            .select_from(items.outerjoin(workers, workers.c.worker == items.c.worker))
            .where(*self._key(run, generation, kind), items.c.worker != self.worker)).all()
        now = time.time()
        for share, worker, finished, complete, seen in rows:
            cut_short = finished is not None and not complete
            gone = finished is None and _vanished(worker, seen, now)
            if cut_short or gone:
                conn.execute(sa.update(items).where(
                    *self._key(run, generation, kind), items.c.share == share,
                    items.c.worker == worker).values(worker=self.worker, claimed=now,
                                                      finished=None))

    def _heartbeat(self, conn) -> None:
        sa, workers = self.sa, self.workers
        done = conn.execute(sa.update(workers).where(workers.c.worker == self.worker)
                            .values(seen=time.time())).rowcount
        if not done:
            self._insert_ignore(conn, workers, [{"worker": self.worker, "seen": time.time()}])

    # -- Levenberg–Marquardt runs: one item each, claimed by one worker ----------------------

    def claim_polish(self, run: int, generation: int) -> bool:
        """Whether this worker runs the polish after (run, generation) (else another does,
        or did: read :meth:`polish_result`)."""
        with self.engine.begin() as conn:
            self._write_pending(conn)
            self._heartbeat(conn)
            self._reclaim(conn, run, generation, "lm")
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
            self._insert_trials(conn, self._study_id(item.run), item.numbers, item.values,
                                item.scores)
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

    def scores(self, run: int, generation: int, popsize: int) -> np.ndarray | None:
        """The scores of a generation once every share is finished, else None."""
        n_shares = len(shares_of(popsize, self.shares))
        sa, items = self.sa, self.items
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(items.c.result).where(
                *self._key(run, generation), items.c.finished.is_not(None))
                .order_by(items.c.share)).scalars().all()
        if len(rows) < n_shares:
            return None
        return np.array([np.nan if s is None else s for r in rows for s in json.loads(r)],
                        dtype=float)

    def close(self) -> None:
        """Write what is pending and give back the leased generations not started."""
        sa, items = self.sa, self.items
        with self.engine.begin() as conn:
            self._write_pending(conn)
            conn.execute(sa.delete(items).where(
                items.c.study == self.name, items.c.worker == self.worker,
                items.c.finished.is_(None)))
        self.engine.dispose()


def _vanished(worker: str, seen: float | None, now: float) -> bool:
    """A worker that will not finish its claim: a dead process on this host, or not seen
    for STALE_SECONDS."""
    host, _, rest = worker.partition(":")
    pid = rest.partition(":")[0]
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
    return seen is None or now - seen > STALE_SECONDS
