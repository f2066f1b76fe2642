"""The ``campaign`` executable (``ros2 run bam_identify campaign``): fit jobs queued in a
storage and drained by workers on any number of machines.

Example (one database, any number of machines that see the same data paths)::

    campaign add --storage postgresql+psycopg://bam@db/fits --campaign bench7 \\
        --bags /data/bench7 --actuator mx64 --models m1 m2 m3 m4 m5 m6 \\
        --output /data/fits/{actuator}_{model}.yaml --report /data/fits/report
    campaign work --storage postgresql+psycopg://bam@db/fits --campaign bench7   # on each
    campaign status --storage postgresql+psycopg://bam@db/fits --campaign bench7

``add`` takes every option of ``fit`` and queues one job per model (its
parameter file named as ``fit`` names it for several models, its report in
``<report>/<model>``, its study ``<campaign>_<model>``, or
``<campaign>_<actuator>_<model>`` with ``--actuator``, in the same storage).
Adding the same jobs again queues nothing (a retried script is harmless);
a job that would write the file, report folder or study of another job in the
storage is refused, as is a job without data. ``work`` runs jobs until none
is left (:mod:`bam_identify.fitting.campaign`), resuming a job handed back
over its own partial output, and exits 2 naming the jobs that failed.
Bad input ends the command with one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from bam_identify.executable import run_executable
from bam_identify.fit_options import STORAGE_OPTION, fit_parser, number_option
from bam_identify.fitting.job import FitJob, output_paths
from bam_sim.common.cancellation import Cancellation, Cancelled
from bam_sim.common.command_line import ArgumentParser
from bam_sim.common.errors import BamError
from bam_sim.common.output_paths import check_kind, check_not_input


def _where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage", required=True, type=STORAGE_OPTION,
                        help="database of the campaign and its "
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
    work.add_argument("--jobs", type=number_option("jobs"),
                      help="threads for the simulation on this machine")
    work.add_argument("--quiet", action="store_true", help="no progress bars")
    status = sub.add_parser("status", help="the campaign's jobs and their outcome")
    _where(status)
    for child in (add, work, status):
        child.error = parser.error  # one-line errors, exit 2, like every parser here
    return parser


def add_jobs(args: argparse.Namespace, cancel: Cancellation) -> str:
    """Queue one job per model, each checked now rather than when a worker meets it."""
    from bam_identify.fitting.campaign import Campaign, job_to_json
    from bam_identify.fitting.inputs import load_data

    if not args.storage:
        raise BamError("campaign add: give --storage, the database the workers will share")
    if not args.campaign.strip():
        raise BamError("campaign add: --campaign must not be empty; name the campaign")
    if args.robot is not None or args.joints is not None or args.lerobot:
        raise BamError("campaign add: a campaign holds bench fits; share a robot fit between "
                       "machines with fit --robot ... --storage URL --workers N")
    job = FitJob.from_args(args)
    # The data read now as fit reads it (paths, plausibility, the actuator among the
    # logs): a job fit would refuse is refused here, not met later by a worker. The
    # workers read the same paths, so they must be ones every machine sees.
    load_data(job, cancel)
    models = list(dict.fromkeys(job.models))
    # Each job's parameter file as fit would name it with all the models at once (the
    # actuator left to the data), its own report folder and its own study.
    outputs = output_paths(job.output, "{actuator}", models)
    jobs = [dataclasses.replace(job, models=(model,), output=str(outputs[model]),
                                report=job.report / model,
                                study=_study(args.campaign, job.actuator, model))
            for model in models]
    for queued_job in jobs:
        _check_job_outputs(queued_job)
    campaign = Campaign(args.storage, args.campaign, create=True)
    try:
        new, queued = _new_jobs(jobs, args.campaign, campaign.all_jobs())
        numbers = campaign.add([(j.models[0], job_to_json(j)) for j in new])
    finally:
        campaign.close()
    again = f"; {len(queued)} already queued (jobs {', '.join(queued)})" if queued else ""
    if not numbers:
        return f"campaign {args.campaign}: nothing new to queue{again}"
    return (f"queued {len(numbers)} jobs in campaign {args.campaign} (numbers "
            f"{numbers[0]}..{numbers[-1]}){again}; run 'campaign work --storage "
            f"{args.storage} --campaign {args.campaign}' on each machine")


def _check_job_outputs(job: FitJob) -> None:
    """What a worker would refuse in a job's outputs, refused when it is queued: a
    device, a pipe or a socket, an input or a path inside a folder the job reads (a
    name the actuator completes is checked by the worker, once the data names it)."""
    from bam_identify.fitting.inputs import read_paths

    inputs = read_paths(job)
    for path, what, folder in ((Path(job.output), "--output", False),
                               (Path(job.report), "--report", True)):
        if "{actuator}" not in str(path):
            check_kind(path, what, folder)
            check_not_input(path, what, inputs)


def _study(campaign: str, actuator: str | None, model: str) -> str:
    """A job's study: one per campaign and model (and actuator, when given, so that
    several actuators' jobs can share a campaign)."""
    return f"{campaign}_{actuator}_{model}" if actuator else f"{campaign}_{model}"


def _job_files(job: FitJob) -> dict[str, str]:
    """What a job writes: its parameter file (a template), its report folder, its study."""
    return {"file": os.path.normpath(job.output), "folder": os.path.normpath(job.report),
            "study": job.study or ""}


def _new_jobs(jobs: list[FitJob], name: str,
              stored: list[tuple[str, int, str]]) -> tuple[list[FitJob], list[str]]:
    """The jobs not queued yet, and the numbers of those that are (the same ``campaign
    add`` twice queues nothing twice). A job that would write the file, the report
    folder or the study of another job, of any campaign in the storage, is refused."""
    from bam_identify.fitting.campaign import job_from_json, job_to_json

    users: dict[tuple[str, str], str] = {}
    same: dict[str, str] = {}
    for campaign, number, text in stored:
        if campaign == name:
            same[text] = str(number)
        try:
            other = job_from_json(text, FitJob)
        except BamError:  # a job of another version: its paths cannot be read
            continue
        for kind, value in _job_files(other).items():
            users[kind, value] = f"job {number} of campaign {campaign}"
    new, queued = [], []
    for job in jobs:
        if job_to_json(job) in same:
            queued.append(same[job_to_json(job)])
            continue
        for kind, value in _job_files(job).items():
            if (kind, value) in users:
                raise BamError(f"campaign add: the {job.models[0]} job would write {kind} "
                               f"{value}, as {users[kind, value]} does; give another "
                               "--output (with {model}), --report or --campaign")
            users[kind, value] = f"the {job.models[0]} job"
        new.append(job)
    return new, queued


def work(args: argparse.Namespace, cancel: Cancellation) -> str:
    """Claim and run jobs until the campaign has none left for this worker, or until
    ``cancel``: the job under way is then given back (Cancelled)."""
    from bam_identify.fitting.campaign import Campaign

    campaign = Campaign(args.storage, args.campaign)
    done, failed = [], []
    try:
        campaign.require_jobs()
        while not cancel.is_set():
            claimed = campaign.claim()
            if claimed is None:
                break
            (done if _run_job(campaign, *claimed, args, cancel) else failed).append(claimed[0])
    finally:
        campaign.close()
    ran = (f"this worker ran {len(done) + len(failed)} "
           f"({', '.join(map(str, sorted(done + failed))) or 'none'})")
    if failed:
        raise BamError(f"campaign {args.campaign}: job{'s' if len(failed) > 1 else ''} "
                       f"{', '.join(map(str, failed))} failed (see 'campaign status' for why); "
                       f"{ran}")
    left = "stopped" if cancel.is_set() else "no job left"
    return f"campaign {args.campaign}: {left}; {ran}"


def _run_job(campaign, number: int, text: str, args: argparse.Namespace,
             cancel: Cancellation) -> bool:
    """Run one claimed job; whether it succeeded. A cancellation gives it back
    (Cancelled, naming what the job wrote)."""
    from bam_identify.fitting.campaign import DONE, FAILED, job_from_json, own_outputs

    given_back = (f"job {number} given back to campaign {campaign.name}: the next worker "
                  "resumes it (its study and partial output are kept as its own)")
    try:  # from the claim on: a cancellation anywhere gives the job back
        cancel.check()  # requested during the claim
        job = job_from_json(text, FitJob)
        job = dataclasses.replace(job, storage=args.storage, quiet=args.quiet or job.quiet,
                                  jobs=args.jobs or job.jobs)
        outputs = output_paths(job.output, job.actuator or "*", list(job.models))
        job = own_outputs(job, campaign.name, number, [str(p) for p in outputs.values()])
        print(f"job {number}: {', '.join(job.models)}", file=sys.stderr)
        from bam_identify.fitting.run import fit

        summary = fit(job, cancel).summary
    except Cancelled as exc:
        campaign.release(number)
        said = str(exc) or f"campaign {campaign.name}: interrupted"
        raise Cancelled(f"{said}\n{given_back}", exc.written) from None
    except BamError as exc:
        campaign.finish(number, FAILED, {"error": str(exc)})
        print(f"job {number} failed: {exc}", file=sys.stderr)
        return False
    campaign.finish(number, DONE, {"summary": summary})
    return True


def status(args: argparse.Namespace, cancel: Cancellation) -> str:
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
    return run_executable(campaign_parser(),
                          lambda args, cancel: ACTIONS[args.action](args, cancel), argv)
