#!/usr/bin/env python
"""Benchmark: the staff and student pages at scale, through gunicorn as in production.

Seeds its own database (BENCH_DATABASE_URL, created and migrated on first use) with seed_scale.py:
300 students, 20,000 jobs and 20,000 usage records, one student with 500 jobs. Then, per page, prints the
SQL queries one request makes and p50/p95 latency with 1 client and with 8 at once, and p95's ratio to the
goal (150 ms) and to /healthz (the floor: a request that reads nothing) measured in the same run.

    .venv/bin/python scripts/bench_pages.py [--requests 40]

The machine is shared with other tests and benchmarks: expect noise, compare pages within a run.
"""

import argparse
import shlex
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import benchlib

GOAL_SECONDS = 0.150
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

    sessions[0].get(base + path, timeout=120)  # warm
    with ThreadPoolExecutor(max_workers=clients) as pool:
        return list(pool.map(one, range(requests)))


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
    finally:
        benchlib.stop(web)
        benchlib.run_dir_remove(env)


if __name__ == "__main__":
    main()
