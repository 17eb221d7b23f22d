#!/usr/bin/env python
"""Benchmark: what one poll of an unchanged job's page costs, before and after the 304 (jobs.live).

"Before" is the poll without a validator: the whole live part, with both logs read, the job directory walked
and the explanation catalogue run, as every poll did before. "After" is the poll a page sends, with the ETag of
what it shows (If-None-Match): 304 Not Modified when nothing changed. Measured on the benchmark's own database
(BENCH_DATABASE_URL, created and migrated on first use) for a running job with 200 KB of output and 60 files,
and a pending one (whose page explains why it waits): the SQL queries of one poll, and p50/p95 latency in this
process (Django's test client through every middleware) and through gunicorn as in production.

    .venv/bin/python scripts/bench_poll.py [--requests 200]

The machine is shared with other tests and benchmarks: expect noise, compare within a run.
"""

import argparse
import os
import pwd
import shlex
import time
from pathlib import Path

import benchlib

WEB = "gunicorn portal.wsgi:application --workers 2 --timeout 60"


def seed(job_root: Path, suffix: str):
    """A course, a student and two live jobs of theirs, each with a job directory the web server may read."""
    from django.utils import timezone

    from courses.models import Assignment, Course, Role
    from jobs.models import Job, Status
    from portal.models import User

    student = User.objects.create_user(username=f"poll-{suffix}", netid=f"poll{suffix}")
    course = Course.objects.create(
        slug=f"poll-{suffix}", code="POLL", title="Poll benchmark", term="Fall", slurm_account="poll"
    )
    course.enrollments.create(user=student, role=Role.STUDENT)
    assignment = Assignment.objects.create(
        course=course, slug="train", title="Train a model", script_template="#!/bin/bash\npython train.py\n"
    )
    now = timezone.now()
    jobs = {}
    for label, status, fields in (
        ("running", Status.RUNNING, {"slurm_state": "RUNNING", "started_at": now}),
        ("pending", Status.PENDING, {"slurm_state": "PENDING", "reason": "Priority", "queue_position": 7}),
    ):
        workdir = job_root / label
        jobs[label] = Job.objects.create(
            user=student,
            assignment=assignment,
            run_as=student.netid,
            gpus=1,
            cpus=2,
            mem_mb=4000,
            minutes=30,
            account="poll",
            script="#!/bin/bash\npython train.py\n",
            workdir=str(workdir),
            status=status,
            slurm_job_id=str(1000 + len(jobs)),
            submitted_at=now,
            checked_at=now,
            **fields,
        )
        Job.objects.filter(pk=jobs[label].pk).update(updated_at=now)
        _job_directory(workdir, running=label == "running")
    return student, jobs


def _job_directory(workdir: Path, *, running: bool) -> None:
    """Owned by root, readable by the service account's group, as the portal reads a student's directory."""
    gid = pwd.getpwnam(benchlib.SERVICE_ACCOUNT).pw_gid
    (workdir / "results").mkdir(parents=True)
    lines = "".join(f"epoch {n} step {s} loss {1 / (n + s + 1):.5f}\n" for n in range(40) for s in range(200))
    files = {"job.out": lines[: 200 * 1024] if running else "", "job.err": "", "job.sh": "#!/bin/bash\n"}
    files.update({f"results/checkpoint-{n:02}.txt": "w" * 1000 for n in range(57 if running else 0)})
    for name, text in files.items():
        (workdir / name).write_text(text)
    for path in [workdir, workdir / "results", *(workdir / name for name in files)]:
        os.chown(path, 0, gid)
        os.chmod(path, 0o750 if path.is_dir() else 0o640)


def poll_in_process(client, url: str, etag: str | None, requests: int) -> tuple[int, list[float]]:
    from django.db import connection

    headers = {"HTTP_IF_NONE_MATCH": etag} if etag else {}
    expected = 304 if etag else 200
    statements = []
    with connection.execute_wrapper(lambda execute, sql, *args: statements.append(sql) or execute(sql, *args)):
        assert client.get(url, **headers).status_code == expected
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url, **headers)
        times.append(time.perf_counter() - started)
        assert response.status_code == expected, response.status_code
    return len(statements), times


def poll_over_http(session, url: str, etag: str | None, requests: int) -> list[float]:
    headers = {"If-None-Match": etag} if etag else {}
    expected = 304 if etag else 200
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = session.get(url, headers=headers, timeout=60)
        times.append(time.perf_counter() - started)
        assert response.status_code == expected, response.status_code
    return times


def ms(times: list[float]) -> str:
    return (
        f"p50 {benchlib.percentile(times, 0.5) * 1000:6.2f} ms  p95 {benchlib.percentile(times, 0.95) * 1000:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="polls per job and kind")
    parser.add_argument("--web", default=WEB)
    options = parser.parse_args()
    benchlib.root_required()
    # No sync runs here: a long sync period keeps the jobs from looking out of date (jobs.live.job_out_of_date).
    env = benchlib.setup_django(LABQUEUE_DEMO="0", LABQUEUE_DEBUG="0", LABQUEUE_SYNC_SECONDS="3600")
    import requests
    from django.conf import settings
    from django.test import Client
    from django.utils import timezone

    from jobs.models import Job

    run_dir = Path(env["BENCH_RUN_DIR"])
    student, jobs = seed(Path(env["LABQUEUE_JOB_ROOT"]) / "poll", run_dir.name)
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(student)
    session = requests.Session()
    session.cookies.set(settings.SESSION_COOKIE_NAME, client.cookies[settings.SESSION_COOKIE_NAME].value)

    argv = shlex.split(options.web)
    argv[0] = benchlib.venv_bin(argv[0])
    port = 19000 + int(run_dir.name[:3], 16) % 1000
    web_log = run_dir / "web.log"
    web = benchlib.as_service_account(argv + ["--bind", f"127.0.0.1:{port}"], env, web_log)
    base = f"http://127.0.0.1:{port}"
    try:
        benchlib.wait_for_text(web_log, "Booting worker", count=2, seconds=60)
        print(f"{options.requests} polls of each unchanged job, one after another")
        print(f"{'job':<8} {'poll':<22} {'queries':>7}  {'in process':<30} {'through gunicorn':<30}")
        for label, job in jobs.items():
            url = f"/jobs/{job.uuid}/status/"
            for kind, conditional in (("before: full answer", False), ("after: If-None-Match", True)):
                # What the sync does every cycle (the page shows "last checked N minutes ago").
                Job.objects.filter(pk=job.pk).update(checked_at=timezone.now())
                sent = client.get(url)["ETag"] if conditional else None
                count, local = poll_in_process(client, url, sent, options.requests)
                poll_over_http(session, base + url, sent, 5)  # warm both gunicorn workers
                remote = poll_over_http(session, base + url, sent, options.requests)
                print(f"{label:<8} {kind:<22} {count:>7}  {ms(local):<30} {ms(remote):<30}")
    finally:
        benchlib.stop(web)
        benchlib.run_dir_remove(env)


if __name__ == "__main__":
    main()
