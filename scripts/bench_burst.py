#!/usr/bin/env python
"""Benchmark: a deadline burst, N submissions by N different students, three ways in one run.

1. raw     `sbatch` as each student (runuser), one after another, of the job the portal sends: the reference.
2. pipeline  the portal's worker side: N jobs committed at once (as N clicks would), then the Celery
           workers (real processes, as the service account) send them; latency = commit -> Slurm id recorded.
3. http    end to end: N signed-in students open the assignment page and POST its form to gunicorn
           (`--clients` at a time); latency = click -> Slurm id recorded.

Prints submissions/s, p50/p95/max latency, and each rate's ratio to raw. Every job it submitted is
cancelled at the end.

The lab has only a few student accounts, so the benchmark makes lab users bench001..benchNNN in the
`students` group with an association in the cs101 account (idempotent: made once, kept for later runs;
no other account is changed or removed). It uses a database of its own (BENCH_DATABASE_URL, created and
migrated on first use) and Redis DB 7 (BENCH_REDIS_URL), emptied first. Run it as root:

    .venv/bin/python scripts/bench_burst.py [--students 300] [--clients 8] [--worker "celery -A portal worker ..."]

The lab cluster is shared: other tests running meanwhile make the figures noisy; compare ratios within a run.
"""

import argparse
import re
import shlex
import subprocess
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import benchlib

ACCOUNT = "cs101"
PARTITION = "gpu"
SCRIPT = "true\n"


def lab_users(count: int) -> list[str]:
    """bench001..benchNNN: POSIX users in `students`, each with an association in ACCOUNT (made if missing)."""
    names = [f"bench{number:03d}" for number in range(1, count + 1)]
    passwd = {line.split(":", 1)[0] for line in Path("/etc/passwd").read_text().splitlines()}
    for name in names:
        if name not in passwd:
            subprocess.run(
                ["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/bash"]
                + ["--groups", "students", name],
                check=True,
            )
    listed = subprocess.run(
        ["sacctmgr", "-n", "-P", "show", "assoc", f"account={ACCOUNT}", "format=user"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    missing = [name for name in names if name not in listed]
    for start in range(0, len(missing), 100):
        subprocess.run(
            ["sacctmgr", "-i", "add", "user", ",".join(missing[start : start + 100]), f"account={ACCOUNT}"],
            check=True,
            capture_output=True,
        )
    return names


def raw_burst(names: list[str], folder: Path) -> tuple[float, list[float], list[str]]:
    """sbatch as each student, one after another: the very job the portal sends (the same script and resources,
    not held, so the cluster starts and ends it as it does the portal's). Returns seconds, latencies, ids."""
    script = folder / "raw.sh"
    script.write_text("#!/bin/bash\n" + SCRIPT)
    script.chmod(0o755)
    latencies, ids = [], []
    started = time.perf_counter()
    for name in names:
        begun = time.perf_counter()
        answer = subprocess.run(
            ["runuser", "-u", name, "--", "sbatch", "--parsable", "--export=NONE"]
            + [f"--account={ACCOUNT}", f"--partition={PARTITION}", "--job-name=lq-bench-raw", "--time=1"]
            + ["--mem=100M", "--chdir=/tmp", "--output=/dev/null", str(script)],
            capture_output=True,
            text=True,
            check=True,
        )
        latencies.append(time.perf_counter() - begun)
        ids.append(answer.stdout.strip().split(";")[0])
    return time.perf_counter() - started, latencies, ids


def portal_data(names: list[str]):
    """The benchmark's course, assignment and one portal student per lab user (made once)."""
    from courses.models import Assignment, Course, Role
    from jobs.models import Job
    from portal.models import User

    course, _ = Course.objects.get_or_create(
        slug="bench",
        defaults={"code": "BENCH", "title": "Benchmark", "term": "-", "slurm_account": ACCOUNT},
    )
    Course.objects.filter(pk=course.pk).update(
        partition=PARTITION, max_gpus_per_job=0, max_queued_jobs_per_student=5, max_running_jobs_per_student=5
    )
    assignment, _ = Assignment.objects.get_or_create(
        course=course,
        slug="burst",
        defaults={"title": "Burst", "script_template": SCRIPT, "gpus": 0, "cpus": 1, "mem_mb": 100, "minutes": 1},
    )
    Job.objects.filter(assignment__course=course).delete()  # an earlier run's
    have = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    User.objects.bulk_create([User(username=name, netid=name, password="!") for name in names if name not in have])
    users = list(User.objects.filter(username__in=names).order_by("username"))
    enrolled = set(course.enrollments.values_list("user_id", flat=True))
    missing = [user for user in users if user.pk not in enrolled]
    course.enrollments.bulk_create(
        [course.enrollments.model(course=course, user=user, role=Role.STUDENT) for user in missing]
    )
    return course, assignment, users


def start_workers(commands: list[str], env: dict[str, str], log: Path) -> list[subprocess.Popen]:
    workers = []
    for number, command in enumerate(commands):
        argv = shlex.split(command)
        argv[0] = benchlib.venv_bin(argv[0])
        workers.append(benchlib.as_service_account(argv + [f"--hostname=bench{number}@%h"], env, log))
    benchlib.wait_for_text(log, " ready.", count=len(commands), seconds=90)
    return workers


def wait_sent(job_ids: list[int], seconds: float = 900) -> None:
    from jobs.models import Job, Status

    deadline = time.monotonic() + seconds
    while Job.objects.filter(pk__in=job_ids, status__in=[Status.QUEUED, Status.SUBMITTING]).exists():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the portal to send the jobs")
        time.sleep(0.2)


def sent_times(job_ids: list[int]) -> dict[int, float]:
    """Job pk -> when its Slurm id was recorded (epoch seconds); a refused job is reported."""
    from jobs.models import Job

    rows = Job.objects.filter(pk__in=job_ids).values_list("pk", "submitted_at", "status", "message")
    refused = [(pk, status, message) for pk, at, status, message in rows if at is None]
    if refused:
        print(f"  {len(refused)} job(s) not sent, e.g. {refused[0]}")
    return {pk: at.timestamp() for pk, at, _, _ in rows if at is not None}


def pipeline_burst(users, assignment) -> tuple[float, list[float], list[int]]:
    """N jobs committed in one transaction (N clicks at once), then sent by the running workers."""
    from django.db import transaction

    from courses.scripting import Resources
    from jobs.services import job_submit

    resources = Resources(gpus=0, cpus=1, mem_mb=100, minutes=1)
    stamp: list[float] = []
    with transaction.atomic():
        transaction.on_commit(lambda: stamp.append(time.time()))  # runs first, before the jobs' enqueues
        jobs = [job_submit(user=user, assignment=assignment, values={}, resources=resources) for user in users]
    committed = stamp[0]
    ids = [job.pk for job in jobs]
    wait_sent(ids)
    sent = sent_times(ids)
    return max(sent.values()) - committed, [at - committed for at in sent.values()], ids


def http_burst(users, course, assignment, base: str, clients: int) -> tuple[float, list[float], list[int]]:
    """Each student (signed in beforehand) opens the assignment page and submits its form."""
    import requests
    from django.conf import settings
    from django.test import Client

    from jobs.models import Job

    browsers = []
    for user in users:
        login = Client()
        login.force_login(user)
        browser = requests.Session()
        browser.cookies.set(settings.SESSION_COOKIE_NAME, login.cookies[settings.SESSION_COOKIE_NAME].value)
        browsers.append(browser)
    page_url = f"{base}/courses/{course.slug}/assignments/{assignment.slug}/"
    form = {"gpus": "0", "cpus": "1", "mem_mb": "100", "minutes": "1"}

    def click(browser) -> tuple[float, str]:
        page = browser.get(page_url, timeout=120)
        assert page.status_code == 200, page.status_code
        fields = dict(re.findall(r'name="(csrfmiddlewaretoken|submission_key)" value="([^"]+)"', page.text))
        clicked = time.time()
        answer = browser.post(
            f"{base}/jobs/submit/{course.slug}/{assignment.slug}/",
            data={**form, **fields},
            headers={"Referer": page_url},
            timeout=120,
            allow_redirects=False,
        )
        assert answer.status_code == 302, (answer.status_code, answer.text[-2000:])
        return clicked, answer.headers["Location"].rstrip("/").rsplit("/", 1)[1]

    started = time.time()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        clicks = list(pool.map(click, browsers))
    by_uuid = dict(Job.objects.filter(assignment=assignment).values_list("uuid", "pk"))
    ids = [by_uuid[uuid.UUID(job_uuid)] for _, job_uuid in clicks]
    wait_sent(ids)
    sent = sent_times(ids)
    latencies = [sent[pk] - clicked for (clicked, _), pk in zip(clicks, ids, strict=True) if pk in sent]
    return max(sent.values()) - started, latencies, ids


def cancel(slurm_ids: list[str]) -> None:
    for start in range(0, len(slurm_ids), 200):
        subprocess.run(["scancel", *slurm_ids[start : start + 200]], capture_output=True, check=False)


def line(name: str, count: int, seconds: float, latencies: list[float], reference: float | None) -> str:
    rate = count / seconds
    ratio = f"{rate / reference:5.2f}x raw" if reference else "reference"
    return f"{name:<9} {rate:7.1f} submissions/s  {benchlib.summary(latencies)}  {ratio}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8, help="browsers submitting at once in the HTTP burst")
    parser.add_argument(
        "--worker", action="append", help="a worker command line (repeat for several); default: README's"
    )
    parser.add_argument("--web", default="gunicorn portal.wsgi:application --workers 3 --threads 4 --timeout 60")
    parser.add_argument("--skip-http", action="store_true")
    options = parser.parse_args()
    benchlib.root_required()
    names = lab_users(options.students)
    env = benchlib.setup_django(LABQUEUE_DEMO="0", LABQUEUE_DEBUG="0", LABQUEUE_SYNC_SECONDS="3600")
    benchlib.redis_flush()
    from jobs.models import Job

    course, assignment, users = portal_data(names)
    run_dir = Path(env["BENCH_RUN_DIR"])
    log = run_dir / "worker.log"
    commands = options.worker or list(benchlib.WORKERS)
    print(f"{options.students} students; workers: {commands}; logs in {run_dir}")
    processes: list[subprocess.Popen] = []
    submitted: list[str] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            Path(folder).chmod(0o755)  # the students read the script
            raw_seconds, raw_latencies, raw_ids = raw_burst(names, Path(folder))
        submitted += raw_ids
        cancel(raw_ids)
        raw_rate = len(names) / raw_seconds
        print(line("raw", len(names), raw_seconds, raw_latencies, None))

        processes += start_workers(commands, env, log)
        seconds, latencies, ids = pipeline_burst(users, assignment)
        slurm_ids = list(Job.objects.filter(pk__in=ids).exclude(slurm_job_id="").values_list("slurm_job_id", flat=True))
        submitted += slurm_ids
        cancel(slurm_ids)
        print(line("pipeline", len(ids), seconds, latencies, raw_rate))

        if not options.skip_http:
            argv = shlex.split(options.web)
            argv[0] = benchlib.venv_bin(argv[0])
            port = 18000 + int(run_dir.name[:3], 16) % 1000
            web_log = run_dir / "web.log"
            processes.append(benchlib.as_service_account(argv + ["--bind", f"127.0.0.1:{port}"], env, web_log))
            benchlib.wait_for_text(web_log, "Booting worker", seconds=60)
            time.sleep(2)
            Job.objects.filter(assignment=assignment).delete()
            seconds, latencies, ids = http_burst(users, course, assignment, f"http://127.0.0.1:{port}", options.clients)
            slurm_ids = list(
                Job.objects.filter(pk__in=ids).exclude(slurm_job_id="").values_list("slurm_job_id", flat=True)
            )
            submitted += slurm_ids
            cancel(slurm_ids)
            print(line("http", len(ids), seconds, latencies, raw_rate) + f"  ({options.clients} clients)")
    finally:
        for process in processes:
            benchlib.stop(process)
        cancel(submitted)
        benchlib.run_dir_remove(env)


if __name__ == "__main__":
    main()
