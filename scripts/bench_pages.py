#!/usr/bin/env python
"""Benchmark: the staff and student pages at scale, through gunicorn as in production.

Seeds its own database (BENCH_DATABASE_URL, created and migrated on first use) with seed_scale.py:
300 students, 20,000 jobs and 20,000 usage records, one student with 500 jobs. Then, per page, prints the
SQL queries one request makes and p50/p95 latency with 1 client and with 8 at once, and p95's ratio to the
goal (150 ms) and to /healthz (the floor: a request that reads nothing) measured in the same run.

Then the report pages (report, statement, CSV) right after a change, the moment they used to be slow: in each of
CHANGES rounds, a change, then 8 clients at once. Two changes: an accounting ingest (ten new records and the mark,
then the worker's refresh of the report, started at once in a process of its own while the clients ask, as the
ingest task runs it) and a job the sync changed (no refresh: the first request computes the report again, the
others show the last one).

    .venv/bin/python scripts/bench_pages.py [--requests 40]

The machine is shared with other tests and benchmarks: expect noise, compare pages within a run.
"""

import argparse
import multiprocessing
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import benchlib

GOAL_SECONDS = 0.150
CHANGES = 5  # rounds of "a change, then 8 clients at once" per page and kind of change
REPORT_PAGES = ("course report", "statement", "CSV")
WEB = "gunicorn portal.wsgi:application --workers 3 --threads 4 --timeout 60"


def pages() -> list[tuple[str, str, str]]:
    """(label, who, path) of every page measured."""
    from jobs.models import Job, Status

    job = Job.objects.filter(user__username="scale001", status=Status.FAILED).order_by("-created_at").first()
    return [
        ("healthz (floor)", "scale-ta", "/healthz"),
        ("course job list", "scale-ta", "/jobs/course/scale/"),
        ("failed jobs", "scale-ta", "/jobs/course/scale/failed/"),
        ("course report", "scale-ta", "/reports/course/scale/"),
        ("statement", "scale-ta", "/reports/course/scale/statement/"),
        ("CSV", "scale-ta", "/reports/course/scale/usage.csv"),
        ("My jobs (500)", "scale001", "/jobs/"),
        ("job page", "scale001", f"/jobs/{job.uuid}/"),
        ("job poll", "scale001", f"/jobs/{job.uuid}/status/"),
    ]


def queries(who: str, path: str) -> int:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from portal.models import User

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(User.objects.get(username=who))
    client.get(path)  # warm (sessions, caches)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return len(captured.captured_queries)


def browser(who: str):
    import requests
    from django.conf import settings
    from django.test import Client

    from portal.models import User

    login = Client()
    login.force_login(User.objects.get(username=who))
    session = requests.Session()
    session.cookies.set(settings.SESSION_COOKIE_NAME, login.cookies[settings.SESSION_COOKIE_NAME].value)
    return session


def latencies(base: str, who: str, path: str, clients: int, requests: int) -> list[float]:
    sessions = [browser(who) for _ in range(clients)]

    def one(number: int) -> float:
        started = time.perf_counter()
        answer = sessions[number % clients].get(base + path, timeout=120)
        assert answer.status_code == 200, (path, answer.status_code)
        return time.perf_counter() - started

    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(one, range(clients)))  # warm: each client's connection, each web worker it reaches
        return list(pool.map(one, range(requests)))


def ingested() -> multiprocessing.Process:
    """What an accounting ingest cycle writes for the course (ten new records, the cluster's mark), then the
    worker's refresh of the course's report (reports.tasks.usage_ingest), started at once in a process."""
    from django.conf import settings
    from django.db import connections
    from django.utils import timezone
    from seed_scale import ACCOUNT

    from reports.course_report import course_reports_refresh
    from reports.models import AccountingCursor, UsageRecord

    now = timezone.now()
    newest = UsageRecord.objects.filter(account=ACCOUNT).order_by("-pk").first()
    fields = {field.attname: getattr(newest, field.attname) for field in UsageRecord._meta.concrete_fields}
    batch = f"b{time.time_ns()}"  # slurm job ids no other record has
    UsageRecord.objects.bulk_create(
        [UsageRecord(**{**fields, "id": None, "job_id": None, "slurm_job_id": f"{batch}{n}"}) for n in range(10)]
    )
    AccountingCursor.objects.filter(cluster=settings.LABQUEUE_SLURM_CLUSTER).update(
        ingested_until=now, last_success_at=now
    )

    def refresh() -> None:
        course_reports_refresh(accounts={ACCOUNT})
        connections.close_all()

    # A process of its own, as the worker is: the clients' threads here do not wait for its computing.
    connections.close_all()
    worker = multiprocessing.get_context("fork").Process(target=refresh)
    worker.start()
    return worker


def job_changed() -> None:
    """What a sync cycle writes when one of the course's jobs changed: the job saved (no report refresh)."""
    from jobs.models import Job

    job = Job.objects.filter(assignment__course__slug="scale").order_by("-pk").first()
    job.save(update_fields=["updated_at"])


def after_changes(base: str, who: str, path: str, change, per_round: int) -> list[float]:
    """Latencies of 8 clients at once, `per_round` requests right after each of CHANGES changes."""
    sessions = [browser(who) for _ in range(8)]

    def one(number: int) -> float:
        started = time.perf_counter()
        answer = sessions[number % 8].get(base + path, timeout=120)
        assert answer.status_code == 200, (path, answer.status_code)
        return time.perf_counter() - started

    found = []
    for _ in range(CHANGES):
        worker = change()
        with ThreadPoolExecutor(max_workers=8) as pool:
            found += pool.map(one, range(per_round))
        if worker:
            worker.join()
        time.sleep(0.5)
    return found


def report_after_changes(base: str, requests: int) -> None:
    print(f"\nReport pages right after a change: {CHANGES} rounds of a change, then 8 clients at once")
    print(f"{'page':<16} {'after an ingest (worker refreshes)':<36} {'after a job changed (no refresh)':<36}")
    for label, who, path in pages():
        if label not in REPORT_PAGES:
            continue
        cells = []
        for change in (ingested, job_changed):
            found = after_changes(base, who, path, change, max(8, requests // CHANGES))
            p50, p95 = benchlib.percentile(found, 0.5) * 1000, benchlib.percentile(found, 0.95) * 1000
            cells.append(f"p50 {p50:5.0f} ms  p95 {p95:5.0f} ms  max {max(found) * 1000:5.0f}")
        print(f"{label:<16} {cells[0]:<36} {cells[1]:<36}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40, help="requests per page and concurrency")
    parser.add_argument("--web", default=WEB)
    options = parser.parse_args()
    benchlib.root_required()
    env = benchlib.setup_django(LABQUEUE_DEMO="0", LABQUEUE_DEBUG="0")
    from seed_scale import seed_scale  # beside this script; its models need Django set up first

    started = time.perf_counter()
    print(seed_scale())
    print(f"seed_scale: {time.perf_counter() - started:.1f} s")
    run_dir = Path(env["BENCH_RUN_DIR"])
    argv = shlex.split(options.web)
    argv[0] = benchlib.venv_bin(argv[0])
    port = 19000 + int(run_dir.name[:3], 16) % 1000
    web_log = run_dir / "web.log"
    web = benchlib.as_service_account(argv + ["--bind", f"127.0.0.1:{port}"], env, web_log)
    base = f"http://127.0.0.1:{port}"
    try:
        benchlib.wait_for_text(web_log, "Booting worker", seconds=60)
        time.sleep(2)
        print(f"{'page':<16} {'queries':>7}  {'1 client':<30} {'8 clients':<30} {'p95 (8) / goal':>14} {'/ floor':>8}")
        floor = None
        for label, who, path in pages():
            count = queries(who, path)
            one = latencies(base, who, path, 1, options.requests)
            eight = latencies(base, who, path, 8, options.requests)
            p95 = benchlib.percentile(eight, 0.95)
            floor = floor or p95
            cell = "p50 {:5.0f} ms  p95 {:5.0f} ms"
            print(
                f"{label:<16} {count:>7}  "
                f"{cell.format(benchlib.percentile(one, 0.5) * 1000, benchlib.percentile(one, 0.95) * 1000):<30} "
                f"{cell.format(benchlib.percentile(eight, 0.5) * 1000, p95 * 1000):<30} "
                f"{p95 / GOAL_SECONDS:>13.2f}x {p95 / floor:>7.1f}x"
            )
        report_after_changes(base, options.requests)
    finally:
        benchlib.stop(web)
        benchlib.run_dir_remove(env)


if __name__ == "__main__":
    main()
