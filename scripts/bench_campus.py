#!/usr/bin/env python
"""Benchmark: the pages and the background work of a campus, five years of a college, against seed_scale's course.

Two data sets, each in a database of its own, measured in one run:
- 20k: seed_scale.py in the benchmarks' database (BENCH_DATABASE_URL): 300 students, 20,000 jobs and usage records;
- 1M: seed_campus.py in `<that database>_campus`: the same course and 99 more, 3,000 students, 1,000,000 jobs and
  1,000,000 usage records over five years (seeded once, a few minutes; later runs reuse it).
Per data set, every page through gunicorn as in production: SQL queries per request, p50/p95 sequential (1 client)
and, with --clients 8, p95 with 8 at once. Then, in process, what grows with the data: the course report computed
(it is cached between changes; its first view after one computes it), one sync cycle with a few active jobs, one
accounting ingest of a small batch and one retention purge of a small batch: SQL statements and wall time. Slurm's
answers to the sync and the ingest are built here (squeue, sacct and the usage sacct replaced for the
measurement), so only the database side is measured and the lab cluster is not needed. Each of those runs in a
transaction rolled back at its end: the seeded databases stay as they were.

    .venv/bin/python scripts/bench_campus.py [--requests 40] [--clients 8] [--only 1M]

The machine is shared with other tests and benchmarks: expect noise, compare pages within a run.
"""

import argparse
import shlex
import time
import uuid
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from unittest import mock

import benchlib
from bench_pages import GOAL_SECONDS, WEB, latencies, queries

REQUESTS = 40
ACTIVE_JOBS = 10  # in the sync cycle: half start running, half finish
INGESTED = 50  # records in the ingest: the finished half of the active jobs again, and the rest new
PURGED = 100  # jobs whose files are due in the purge


def pages() -> list[tuple[str, str, str]]:
    """(label, who, path) of every page measured."""
    from django.utils import timezone

    from jobs.models import Job, Status

    job = Job.objects.filter(user__username="scale001", status=Status.FAILED).order_by("-created_at").first()
    today = timezone.localdate()
    days60 = f"?first={today - timedelta(days=59)}&last={today}"
    return [
        ("healthz (floor)", "scale-ta", "/healthz"),
        ("usage overview", "campus-ops", "/reports/"),
        ("course job list", "scale-ta", "/jobs/course/scale/"),
        ("failed jobs", "scale-ta", "/jobs/course/scale/failed/"),
        ("course report", "scale-ta", "/reports/course/scale/"),
        ("report 60 days", "scale-ta", f"/reports/course/scale/{days60}"),
        ("statement", "scale-ta", "/reports/course/scale/statement/"),
        ("CSV", "scale-ta", "/reports/course/scale/usage.csv"),
        ("My usage", "scale001", f"/reports/course/scale/mine/{days60}"),
        ("My jobs (500)", "scale001", "/jobs/"),
        ("job page", "scale001", f"/jobs/{job.uuid}/"),
        ("job poll", "scale001", f"/jobs/{job.uuid}/status/"),
    ]


def ops_user() -> None:
    """The operations user of the usage overview (seed_campus makes it; the 20k data set gets it here)."""
    from portal.models import User

    User.objects.update_or_create(username="campus-ops", defaults={"is_staff": True, "password": "!"})


def measure_pages(env: dict[str, str], options) -> dict[str, tuple]:
    """label -> (queries, 1-client latencies, 8-client latencies or None), through a gunicorn of this data set."""
    benchlib.redis_flush()  # the other data set's cached reports and sessions
    run_dir = Path(env["BENCH_RUN_DIR"])
    argv = shlex.split(options.web)
    argv[0] = benchlib.venv_bin(argv[0])
    port = benchlib.free_port()
    web_log = run_dir / f"web-{port}.log"
    web = benchlib.as_service_account(argv + ["--bind", f"127.0.0.1:{port}"], env, web_log)
    base = f"http://127.0.0.1:{port}"
    found = {}
    try:
        benchlib.wait_for_text(web_log, "Booting worker", seconds=60)
        time.sleep(2)
        for label, who, path in pages():
            count = queries(who, path)
            one = latencies(base, who, path, 1, options.requests)
            many = latencies(base, who, path, options.clients, options.requests) if options.clients > 1 else None
            found[label] = (count, one, many)
            print(f"  {label:<16} {count:>3} queries  {benchlib.summary(one)}", flush=True)
    finally:
        benchlib.stop(web)
    return found


@contextmanager
def counted(into: dict, label: str):
    """SQL statements (and how many write) and seconds of the block, into `into[label]`."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        yield
        seconds = time.perf_counter() - started
    statements = [query["sql"].lstrip().upper() for query in captured.captured_queries]
    writes = sum(1 for sql in statements if sql.startswith(("UPDATE", "INSERT", "WITH", "DELETE")))
    into[label] = (len(statements), writes, seconds)


@contextmanager
def rolled_back():
    from django.db import transaction

    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def measure_work() -> dict[str, tuple]:
    """label -> (statements, writes, seconds) of the course report computed and of one sync, ingest and purge."""
    from django.utils import timezone

    from courses.models import Course
    from reports.course_report import course_report
    from reports.forms import course_default_first
    from reports.queries import ReportRange

    found = {}
    course = Course.objects.get(slug="scale")
    today = timezone.localdate()
    for label, first in (("report computed", course_default_first(course)), ("report 60 d computed", None)):
        window = ReportRange.for_days(first or today - timedelta(days=59), today)
        course_report(course=course, window=window)  # warm
        with counted(found, label):
            course_report(course=course, window=window)
    with rolled_back():
        sync_cycle(found)
    with rolled_back():
        ingest(found)
    with rolled_back():
        purge(found)
    return found


def active_jobs(count: int) -> list:
    """`count` new jobs of scale001 waiting in Slurm, as the submit worker leaves them."""
    from jobs.models import Job, Status

    model = Job.objects.filter(user__username="scale001").order_by("-created_at").first()
    made = []
    for number in range(count):
        job = Job.objects.get(pk=model.pk)
        job.pk, job.id, job.uuid = None, None, uuid.uuid4()
        job.status, job.slurm_job_id, job.slurm_state = Status.PENDING, str(90_000_000 + number), "PENDING"
        job.exit_code = job.started_at = job.ended_at = job.elapsed_seconds = job.usage_collected_at = None
        job.explanation_key, job.submitted_at = "", timezone_now()
        job.save()
        made.append(job)
    return made


def timezone_now():
    from django.utils import timezone

    return timezone.now()


def acct_record(job, state: str):
    import slurm

    now = timezone_now()
    return slurm.AcctRecord(
        job_id=job.slurm_job_id,
        name=job.slurm_name,
        user=job.run_as,
        account=job.account,
        partition="gpu",
        qos="normal",
        reservation="",
        state=state,
        cancelled_by="",
        exit_code=0,
        signal=0,
        reason="None",
        submit=job.submitted_at,
        start=now - timedelta(seconds=60),
        end=now,
        elapsed_seconds=60,
        gpus=1,
        cpus=2,
        mem_mb=4000,
        billing=2,
    )


def sync_cycle(found: dict) -> None:
    """One sync cycle (jobs.dispatch.jobs_sync) with ACTIVE_JOBS active: half start running, half left the queue
    and completed; squeue, sacct and the usage sacct answer with what is built here."""
    import slurm
    from jobs import dispatch

    jobs = active_jobs(ACTIVE_JOBS)
    running, done = jobs[: len(jobs) // 2], jobs[len(jobs) // 2 :]
    now = timezone_now()
    live = {
        job.slurm_job_id: slurm.LiveJob(
            job_id=job.slurm_job_id,
            name=job.slurm_name,
            user=job.run_as,
            account=job.account,
            partition="gpu",
            state="RUNNING",
            reason="None",
            priority=1,
            submit_time=job.submitted_at,
            start_time=now,
            nodes="gpu1",
        )
        for job in running
    }
    finished = {job.slurm_job_id: acct_record(job, "COMPLETED") for job in done}

    def usage(job_ids, *, cluster=""):
        return {job_id: slurm.JobUsage(job_id=job_id, cpu_seconds=30.0, max_rss_mb=100) for job_id in job_ids}

    with (
        mock.patch.object(slurm, "queue", lambda *, cluster="": live),
        mock.patch.object(slurm, "accounting", lambda **kwargs: finished),
        mock.patch.object(slurm, "job_usage", usage),
        counted(found, f"sync cycle ({ACTIVE_JOBS} active)"),
    ):
        dispatch.jobs_sync()


def ingest(found: dict) -> None:
    """One accounting ingest (reports.ingest.usage_ingest) whose sacct answers INGESTED records: those of
    ACTIVE_JOBS / 2 portal jobs that finished, and the rest jobs made outside the portal."""
    import slurm
    from reports.ingest import usage_ingest

    jobs = active_jobs(ACTIVE_JOBS // 2)
    records = {job.slurm_job_id: acct_record(job, "COMPLETED") for job in jobs}
    now = timezone_now()
    for number in range(INGESTED - len(records)):
        job_id = str(95_000_000 + number)
        records[job_id] = slurm.AcctRecord(
            job_id=job_id,
            name="outside",
            user="scale002",
            account="scale",
            partition="gpu",
            qos="normal",
            reservation="",
            state="COMPLETED",
            cancelled_by="",
            exit_code=0,
            signal=0,
            reason="None",
            submit=now - timedelta(minutes=5),
            start=now - timedelta(minutes=4),
            end=now,
            elapsed_seconds=240,
            gpus=1,
        )
    with (
        mock.patch.object(slurm, "accounting", lambda **kwargs: records),
        counted(found, f"ingest ({INGESTED} records)"),
    ):
        usage_ingest()


def purge(found: dict) -> None:
    """One retention purge (jobs.retention.job_files_purge) in which PURGED finished jobs are due (their
    directories are gone already, so no helper runs)."""
    from django.db.models import Q

    from jobs.models import Job
    from jobs.retention import job_files_purge

    days = 180
    due = list(
        Job.objects.filter(Q(files_purged_at__isnull=False) | Q(assignment__course__slug="scale")).values_list(
            "pk", flat=True
        )[:PURGED]
    )
    Job.objects.filter(pk__in=due).update(files_purged_at=None, ended_at=timezone_now() - timedelta(days=days + 1))
    with counted(found, f"purge ({PURGED} due)"):
        removed = list(job_files_purge(older_than_days=days))
    assert len(removed) >= len(due), (len(removed), len(due))  # and any that came due since the seeding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=REQUESTS, help="requests per page and concurrency")
    parser.add_argument("--clients", type=int, default=1, help="also measure with this many clients at once")
    parser.add_argument("--only", choices=["20k", "1M"], help="measure one data set")
    parser.add_argument("--web", default=WEB)
    options = parser.parse_args()
    benchlib.root_required()
    env = benchlib.setup_django(LABQUEUE_DEMO="0", LABQUEUE_DEBUG="0")
    from seed_campus import seed_campus  # beside this script; its models need Django set up first
    from seed_scale import seed_scale

    sets = [("20k", benchlib.DATABASE_URL, seed_scale), ("1M", benchlib.database_url_named("campus"), seed_campus)]
    results = {}
    try:
        for name, url, seed in sets:
            if options.only and name != options.only:
                continue
            benchlib.database_use(url)
            started = time.perf_counter()
            print(seed())
            print(f"{name}: seeding {time.perf_counter() - started:.1f} s", flush=True)
            ops_user()
            results[name] = (measure_pages({**env, "DATABASE_URL": url}, options), measure_work())
    finally:
        benchlib.run_dir_remove(env)
    report(results, options)


def report(results: dict, options) -> None:
    """One table of pages and one of the work in process, the data sets side by side."""
    names = list(results)
    several = options.clients > 1
    print(f"\nPages: queries per request, p50/p95 ms of {options.requests} sequential requests", end="")
    print(f", p95 ms with {options.clients} clients at once" if several else "")
    print(
        f"{'page':<16}"
        + "".join(f" | {name:>3} queries   p50   p95" + ("  p95/N" if several else "") for name in names)
    )
    for label in results[names[0]][0]:
        cells, over = "", False
        for name in names:
            count, one, many = results[name][0][label]
            p50, p95 = benchlib.percentile(one, 0.5) * 1000, benchlib.percentile(one, 0.95) * 1000
            cells += f" | {count:>11} {p50:5.0f} {p95:5.0f}"
            cells += f" {benchlib.percentile(many, 0.95) * 1000:7.0f}" if many is not None else ""
            over = over or p95 > GOAL_SECONDS * 1000
        print(f"{label:<16}{cells}{'  <- over 150 ms' if over else ''}")
    print("\nIn process: SQL statements (of which writes) and wall time")
    for label in results[names[0]][1]:
        cells = ""
        for name in names:
            statements, writes, seconds = results[name][1][label]
            cells += f" | {name:>3} {statements:>4} ({writes:>3}) {seconds * 1000:8.1f} ms"
        print(f"{label:<24}{cells}")


if __name__ == "__main__":
    main()
