"""The ``campaign`` executable (``ros2 run bam_identify campaign``): fit jobs queued in a
storage and drained by workers on any number of machines.

Example (one database, any number of machines that see the same data paths)::

    campaign add --storage postgresql+psycopg://bam@db/fits --campaign bench7 \\
        --bags /data/bench7 --actuator mx64 --models m1 m2 m3 m4 m5 m6 \\
        --output /data/fits/{actuator}_{model}.yaml --report /data/fits/report
    campaign work --storage postgresql+psycopg://bam@db/fits --campaign bench7   # on each
    campaign status --storage postgresql+psycopg://bam@db/fits --campaign bench7

``add`` takes every option of ``fit`` and queues one job per model (its
report in ``<report>/<model>``, its study ``<campaign>_<model>`` in the same
storage); ``work`` runs jobs until none is left (:mod:`bam_identify.fitting.campaign`).
Bad input ends the command with one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from bam_identify.cli import FitInterrupted, FitJob, _main, fit_parser, run_fit
from bam_sim.common.arguments import ArgumentParser
from bam_sim.common.errors import BamError


def _where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage", required=True, help="database of the campaign and its "
                        "studies (sqlite:///fits.db, postgresql+psycopg://user@host/db)")
    parser.add_argument("--campaign", required=True, help="the campaign's name")


def campaign_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="campaign", description="Queue fit jobs in a storage and "
                            "drain them with workers on several machines.")
    sub = parser.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", parents=[fit_parser()], add_help=False,
                         help="queue one fit job per model (takes every option of fit)")
    add.add_argument("--campaign", required=True, help="the campaign's name")
    work = sub.add_parser("work", help="run the campaign's jobs until none is left")
    _where(work)
    work.add_argument("--jobs", type=int, help="threads for the simulation on this machine")
    work.add_argument("--quiet", action="store_true", help="no progress bars")
    status = sub.add_parser("status", help="the campaign's jobs and their outcome")
    _where(status)
    for child in (add, work, status):
        child.error = parser.error  # one-line errors, exit 2, like every parser here
    return parser


def add_jobs(args: argparse.Namespace) -> str:
    from bam_identify.fitting.campaign import Campaign, job_to_json

    if not args.storage:
        raise BamError("campaign add: give --storage, the database the workers will share")
    job = FitJob.from_args(args)
    for path in (*job.bags, *job.logs):
        if not Path(path).exists():
            raise BamError(f"{path} does not exist; the workers read the data at the paths "
                           "given here, so give paths every machine sees")
    jobs = [(model, job_to_json(dataclasses.replace(
        job, models=(model,), report=job.report / model,
        study=f"{args.campaign}_{model}"))) for model in dict.fromkeys(job.models)]
    campaign = Campaign(args.storage, args.campaign, create=True)
    try:
        numbers = campaign.add(jobs)
    finally:
        campaign.close()
    return (f"queued {len(numbers)} jobs in campaign {args.campaign} (numbers "
            f"{numbers[0]}..{numbers[-1]}); run 'campaign work --storage {args.storage} "
            f"--campaign {args.campaign}' on each machine")


def work(args: argparse.Namespace) -> str:
    """Claim and run jobs until the campaign has none left for this worker."""
    from bam_identify.fitting.campaign import DONE, FAILED, Campaign, job_from_json

    campaign = Campaign(args.storage, args.campaign)
    done = []
    try:
        campaign.require_jobs()
        while (claimed := campaign.claim()) is not None:
            number, text = claimed
            try:  # from the claim on: an interruption anywhere gives the job back
                job = job_from_json(text, FitJob)
                job = dataclasses.replace(job, storage=args.storage,
                                          quiet=args.quiet or job.quiet,
                                          jobs=args.jobs or job.jobs)
                print(f"job {number}: {', '.join(job.models)}", file=sys.stderr)
                summary = run_fit(job)
            except (FitInterrupted, KeyboardInterrupt):
                campaign.release(number)
                raise
            except BamError as exc:
                campaign.finish(number, FAILED, {"error": str(exc)})
                print(f"job {number} failed: {exc}", file=sys.stderr)
                continue
            campaign.finish(number, DONE, {"summary": summary})
            done.append(number)
    finally:
        campaign.close()
    return (f"campaign {args.campaign}: no job left; this worker ran "
            f"{len(done)} ({', '.join(map(str, done)) or 'none'})")


def status(args: argparse.Namespace) -> str:
    import json

    from bam_identify.fitting.campaign import Campaign

    campaign = Campaign(args.storage, args.campaign)
    try:
        campaign.require_jobs()
        rows = campaign.status()
    finally:
        campaign.close()
    lines = [f"{'job':>4} {'model':<12} {'state':<8} {'worker':<32} outcome (the fit's "
             "summary row, or the error)"]
    for row in rows:
        result = json.loads(row["result"]) if row["result"] else {}
        outcome = result.get("error") or next(
            (" ".join(line.split()[1:]) for line in result.get("summary", "").splitlines()
             if line.split()[:1] == [row["model"]]), "")
        lines.append(f"{row['number']:>4} {row['model']:<12} {row['state']:<8} "
                     f"{row['worker'] or '-':<32} {outcome}")
    return "\n".join(lines)


ACTIONS = {"add": add_jobs, "work": work, "status": status}


def campaign_main(argv: list[str] | None = None) -> int:
    return _main(campaign_parser(), lambda args: ACTIONS[args.action](args), argv)
