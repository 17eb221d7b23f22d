#!/usr/bin/env python
"""Benchmark: what one job-status sync cycle costs Slurm and the database, at 2 and at 300 active jobs.

Submits held jobs (they stay PENDING) as student1 on the lab cluster and records them as portal jobs in the
benchmark's own database (BENCH_DATABASE_URL, created and migrated on first use). Per size it runs a first
cycle (which records what squeue says), then measures:
- a quiet cycle (nothing changed in Slurm), and
- a cycle in which half of the jobs finish (cancelled just before; the same cycle reads what they used, one
  more sacct however many),
printing Slurm commands, slurmctld RPCs seen by `sdiag`, SQL statements (and how many write) and wall time.
The reference, measured in the same run: a page that polls `squeue -j` once per open job (one RPC each).
Everything it made is cancelled and deleted at the end. Run it as root:

    .venv/bin/python scripts/bench_sync.py [--sizes 2,300]

The lab cluster is shared: other tests running meanwhile add RPCs of their own to sdiag's counters.
"""

import argparse
import re
import subprocess
import time
import uuid
from collections import Counter

import benchlib

SIZES = (2, 300)


def rpc_counts() -> Counter:
    """slurmctld's RPC counters by message type (sdiag)."""
    out = subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout
    section = out.split("by message type", 1)[1].split("by user", 1)[0]
    return Counter({m[1]: int(m[2]) for m in re.finditer(r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.M)})


def rpcs_since(before: Counter) -> int:
    rpcs = rpc_counts() - before
    rpcs["REQUEST_STATS_INFO"] -= 1  # sdiag's own call
    return sum((+rpcs).values())


def held_jobs(count: int, user, assignment) -> list:
    from jobs.models import Job, Status
    from slurm import runner

    jobs = []
    for _ in range(count):
        name = f"lq-bench-{uuid.uuid4()}"
        argv = ["sbatch", "--parsable", "--hold", "--export=NONE", "--account=cs101", f"--job-name={name}"]
        slurm_id = runner.run(argv + ["--output=/dev/null", "--wrap=true"], run_as="student1").strip()
        jobs.append(
            Job(
                user=user,
                assignment=assignment,
                run_as="student1",
                gpus=0,
                cpus=1,
                mem_mb=100,
                minutes=1,
                account="cs101",
                script="",
                workdir="/nonexistent",
                status=Status.PENDING,
                slurm_job_id=slurm_id,
            )
        )
    return Job.objects.bulk_create(jobs)


def measured_cycle() -> tuple[dict, int, int, int, float]:
    """Slurm commands by tool, slurmctld RPCs, SQL statements, of which writes, seconds of one sync cycle."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs import dispatch
    from slurm import runner

    before = rpc_counts()
    with runner.command_log() as commands, CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        dispatch.jobs_sync()
        seconds = time.perf_counter() - started
    rpcs = rpcs_since(before)
    statements = [query["sql"].lstrip().upper() for query in queries.captured_queries]
    writes = sum(1 for sql in statements if sql.startswith(("UPDATE", "INSERT", "WITH", "DELETE")))
    return dict(Counter(command.tool for command in commands)), rpcs, len(statements), writes, seconds


def polling_reference(slurm_ids: list[str]) -> int:
    """RPCs of the per-job alternative: one `squeue -j` per open job."""
    before = rpc_counts()
    for slurm_id in slurm_ids:
        subprocess.run(["squeue", "-h", "-j", slurm_id], capture_output=True, check=False)
    return rpcs_since(before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    options = parser.parse_args()
    benchlib.root_required()
    env = benchlib.setup_django(LABQUEUE_DEMO="0", LABQUEUE_DEBUG="0")
    from courses.models import Assignment, Course
    from jobs import dispatch
    from jobs.models import Job
    from portal.models import User
    from slurm import runner

    course, _ = Course.objects.get_or_create(
        slug="bench-sync", defaults={"code": "BENCH", "title": "Benchmark", "term": "-", "slurm_account": "cs101"}
    )
    assignment, _ = Assignment.objects.get_or_create(course=course, slug="bench", defaults={"title": "Bench"})
    user, _ = User.objects.get_or_create(username="bench-student", defaults={"netid": None})
    Job.objects.filter(assignment=assignment).delete()
    header = f"{'active':>6} {'cycle':<12} {'commands':<28} {'RPCs':>5} {'SQL':>5} {'writes':>6} {'seconds':>8}"
    print(header + f"  {'per-job polling RPCs (reference)':>34}")
    made: list = []
    try:
        for size in map(int, options.sizes.split(",")):
            made = held_jobs(size, user, assignment)
            ids = [job.slurm_job_id for job in made]
            dispatch.jobs_sync()  # the first cycle records what squeue says (state, reason, position)
            reference = polling_reference(ids)
            for cycle in ("quiet", "half finish"):
                if cycle == "half finish":
                    runner.run(["scancel", *ids[: max(1, size // 2)]])
                tools, rpcs, statements, writes, seconds = measured_cycle()
                ratio = f"{reference} ({reference / max(rpcs, 1):.0f}x the sync's)"
                print(
                    f"{size:>6} {cycle:<12} {str(tools):<28} {rpcs:>5} {statements:>5} {writes:>6} {seconds:>8.3f}"
                    f"  {ratio:>34}"
                )
            runner.run(["scancel", *ids])
            Job.objects.filter(pk__in=[job.pk for job in made]).delete()
            made = []
    finally:
        if made:
            runner.run(["scancel", *[job.slurm_job_id for job in made]])
        Job.objects.filter(assignment=assignment).delete()
        benchlib.run_dir_remove(env)


if __name__ == "__main__":
    main()
