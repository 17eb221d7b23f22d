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

    .venv/bin/python scripts/bench_sync.py [--sizes 2,300] [--other-clusters lab2]

With --other-clusters (scripts/labcluster up-lab2 first) the jobs are spread over lab and the other clusters,
as courses bound to them (LABQUEUE_SLURM_OTHER_CLUSTERS) would have them, and RPCs are counted on every
cluster's controller: the commands per cycle grow with the number of clusters, not of jobs.

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


#: The clusters of this run: "" (the portal's own) and those of --other-clusters.
CLUSTERS = [""]


def on(cluster: str) -> list[str]:
    return ["-M", cluster] if cluster else []


def rpc_counts() -> Counter:
    """slurmctld's RPC counters by message type (sdiag), summed over the run's clusters' controllers."""
    counts = Counter()
    for cluster in CLUSTERS:
        out = subprocess.run(["sdiag", *on(cluster)], capture_output=True, text=True, check=True).stdout
        section = out.split("by message type", 1)[1].split("by user", 1)[0]
        pattern = r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)"
        counts += Counter({m[1]: int(m[2]) for m in re.finditer(pattern, section, re.M)})
    return counts


def rpcs_since(before: Counter) -> int:
    rpcs = rpc_counts() - before
    rpcs["REQUEST_STATS_INFO"] -= len(CLUSTERS)  # sdiag's own calls
    return sum((+rpcs).values())


def held_jobs(count: int, user, assignment) -> list:
    """`count` held jobs as student1, spread evenly over the run's clusters."""
    from jobs.models import Job, Status
    from slurm import runner

    jobs = []
    for index in range(count):
        cluster = CLUSTERS[index % len(CLUSTERS)]
        name = f"lq-bench-{uuid.uuid4()}"
        argv = ["sbatch", *on(cluster), "--parsable", "--hold", "--export=NONE", "--account=cs101"]
        argv += [f"--job-name={name}", "--output=/dev/null", "--wrap=true"]
        slurm_id = runner.run(argv, run_as="student1").strip().split(";")[0]  # -M: "<id>;<cluster>"
        jobs.append(
            Job(
                user=user,
                assignment=assignment,
                cluster=cluster,
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


def polling_reference(jobs: list) -> int:
    """RPCs of the per-job alternative: one `squeue -j` per open job."""
    before = rpc_counts()
    for job in jobs:
        subprocess.run(["squeue", *on(job.cluster), "-h", "-j", job.slurm_job_id], capture_output=True, check=False)
    return rpcs_since(before)


def cancel(jobs: list) -> None:
    """scancel, one call per cluster."""
    from slurm import runner

    for cluster in CLUSTERS:
        ids = [job.slurm_job_id for job in jobs if job.cluster == cluster]
        if ids:
            runner.run(["scancel", *on(cluster), *ids])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--other-clusters", default="", help="e.g. lab2: spread the jobs over lab and these")
    options = parser.parse_args()
    benchlib.root_required()
    env = benchlib.setup_django(LABQUEUE_DEMO="0", LABQUEUE_DEBUG="0")
    from django.conf import settings

    from courses.models import Assignment, Course
    from jobs import dispatch
    from jobs.models import Job
    from portal.models import User

    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = [name for name in options.other_clusters.split(",") if name]
    CLUSTERS[1:] = settings.LABQUEUE_SLURM_OTHER_CLUSTERS
    print(f"Clusters: {', '.join(name or settings.LABQUEUE_SLURM_CLUSTER for name in CLUSTERS)}")

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
            dispatch.jobs_sync()  # the first cycle records what squeue says (state, reason, position)
            reference = polling_reference(made)
            for cycle in ("quiet", "half finish"):
                if cycle == "half finish":
                    cancel(made[: max(1, size // 2)])
                tools, rpcs, statements, writes, seconds = measured_cycle()
                ratio = f"{reference} ({reference / max(rpcs, 1):.0f}x the sync's)"
                print(
                    f"{size:>6} {cycle:<12} {str(tools):<28} {rpcs:>5} {statements:>5} {writes:>6} {seconds:>8.3f}"
                    f"  {ratio:>34}"
                )
            cancel(made)
            Job.objects.filter(pk__in=[job.pk for job in made]).delete()
            made = []
    finally:
        if made:
            cancel(made)
        Job.objects.filter(assignment=assignment).delete()
        benchlib.run_dir_remove(env)


if __name__ == "__main__":
    main()
