#!/usr/bin/env python
"""Benchmark: what one sync cycle costs Slurm for 1, 50 and 200 active jobs.

Submits held jobs (they stay PENDING) as student1 on the lab cluster, records them as
portal jobs in the demo database (var/db.sqlite3 unless DATABASE_URL is set), runs
`jobs_sync()` and prints, per size: Slurm commands run, slurmctld RPCs seen by `sdiag`,
and wall time. Everything it made is cancelled and deleted at the end.

    .venv/bin/python scripts/bench_sync.py          (after `make demo` has migrated once)
"""

import os
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("LABQUEUE_DEBUG", "1")

import django  # noqa: E402

django.setup()

from courses.models import Assignment, Course  # noqa: E402
from jobs import dispatch  # noqa: E402
from jobs.models import Job, Status  # noqa: E402
from portal.models import User  # noqa: E402
from slurm import runner  # noqa: E402

SIZES = (1, 50, 200)


def rpc_counts() -> Counter:
    """slurmctld's RPC counters by message type (sdiag)."""
    out = subprocess.run(["sdiag"], capture_output=True, text=True, check=True).stdout
    section = out.split("by message type", 1)[1].split("by user", 1)[0]
    return Counter({m[1]: int(m[2]) for m in re.finditer(r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)", section, re.M)})


def held_job(user, assignment) -> Job:
    name = f"lq-bench-{uuid.uuid4()}"
    argv = ["sbatch", "--parsable", "--hold", "--export=NONE", "--account=cs101", f"--job-name={name}"]
    slurm_id = runner.run(argv + ["--output=/dev/null", "--wrap=true"], run_as="student1").strip()
    return Job.objects.create(
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


def main() -> None:
    course, _ = Course.objects.get_or_create(
        slug="bench-sync", defaults={"code": "BENCH", "title": "Benchmark", "term": "-", "slurm_account": "cs101"}
    )
    assignment, _ = Assignment.objects.get_or_create(course=course, slug="bench", defaults={"title": "Bench"})
    user, _ = User.objects.get_or_create(username="bench-student", defaults={"netid": None})
    made: list[Job] = []
    print(f"{'active jobs':>12} {'commands':>20} {'slurmctld RPCs':>30} {'seconds':>8}")
    try:
        for size in SIZES:
            while len(made) < size:
                made.append(held_job(user, assignment))
            before = rpc_counts()
            with runner.command_log() as commands:
                started = time.perf_counter()
                dispatch.jobs_sync()
                seconds = time.perf_counter() - started
            rpcs = rpc_counts() - before
            rpcs["REQUEST_STATS_INFO"] -= 1  # sdiag's own call
            rpcs = +rpcs
            tools = dict(Counter(command.tool for command in commands))
            print(f"{size:>12} {str(tools):>20} {str(dict(rpcs)):>30} {seconds:>8.3f}")
    finally:
        if made:
            runner.run(["scancel", *[job.slurm_job_id for job in made]])
        Job.objects.filter(pk__in=[job.pk for job in made]).delete()
        assignment.delete()
        course.delete()
        user.delete()


if __name__ == "__main__":
    main()
