#!/usr/bin/env python
"""Benchmark: a deadline burst through the portal as in production, beside the raw submission commands measured
in the same run. Every figure is printed with the load that produced it.

1. References, before and after the portal: N submissions one after another with `runuser -u <student> --
   sbatch ...`, with `sudo -n -u <student> sbatch ...` (the run-as prefix alone), and with `sudo -n -u <student>
   labqueue-jobdir submit /usr/bin/sbatch ...` run as the service account with the job's file list on stdin (the
   portal's run-as path, the command its worker runs): submissions/s and CPU ms per job.
2. The burst: N signed-in students, each its own HTTP client, post the assignment form to gunicorn at the same
   moment (their pages opened beforehand): click -> Slurm id recorded (the job's submitted_at), p50/p95/max,
   and jobs/s end to end. With `--clients C` (fewer than N), C clients post at once, each again when answered.
3. A deadline: the same N students, each at its own random moment, spread uniformly over `--spread` seconds.
1b. The stack's own floor, in the portal before the burst: N tasks that do nothing (Celery's built-in
   celery.accumulate) sent to the submit worker's queue, and N requests for /healthz one after another (gunicorn
   and Django with no session and no query): CPU ms per task and per request, what any job costs in each at least.
4. CPU ms per submitted job, per process group, for each of the above: /proc/<pid>/stat utime + stime of the
   long-running processes before and after, with cutime + cstime (the children each has reaped: the submit
   worker's sudo + helper + sbatch, the sync worker's squeue and sacct, PostgreSQL's ended backends).

The portal runs as the systemd units start it (benchlib.portal_start: deploy/entrypoint web, worker submit,
sync and maintenance, beat, as the service account), with production settings and JSON logs. The students'
folders in the job root are made beforehand (a student's very first job costs one sudo more).

Jobs never run: the course's Slurm account, `lqburst` (the benchmark's own name), is held with GrpJobs=0, so
every job sent into it, the references' too, waits PENDING (AssocGrpJobsLimit) until it is cancelled.

Everything it makes is removed at its end, also after a failure or Ctrl-C: every job in that account
(scancel), the lab users bench001..benchNNN it made (userdel; one that existed before is used and kept),
the Slurm users it added and the account with its associations (sacctmgr), its database
(BENCH_DATABASE_URL's name + `_burst`, dropped) and its Redis DB (BENCH_REDIS_URL, DB 7, flushed). The logs
stay in the run directory it prints. Run it as root, alone on the lab cluster and the machine:

    .venv/bin/python scripts/bench_burst.py [--students 300] [--clients 300] [--spread 60] [--seed 1]
"""

import argparse
import os
import pwd
import random
import re
import resource
import subprocess
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import benchlib

ACCOUNT = "lqburst"
PARTITION = "gpu"
BODY = "true\n"
FORM = {"gpus": "0", "cpus": "1", "mem_mb": "100", "minutes": "1"}
#: Long-running services, by process name: all their processes, with the children they reaped.
SERVICES = {
    "PostgreSQL": ("postgres",),
    "slurmctld": ("slurmctld",),
    "slurmdbd, MariaDB": ("slurmdbd", "mariadbd"),
    "munged": ("munged",),
    "Redis": ("redis-server",),
}
#: The CPU table's rows: the groups (cpu_groups) each adds up. "commands" are this script's reaped children
#: (the references' commands), "<process> children" those a portal process reaped.
ROWS = (
    ("run-as + helper + sbatch *", ("commands", "submit children")),
    ("Celery submit worker", ("submit",)),
    ("Celery sync worker", ("sync",)),
    ("  its squeue, sacct", ("sync children",)),
    ("Celery maintenance, beat", ("maintenance", "maintenance children", "beat", "beat children")),
    ("gunicorn", ("gunicorn", "gunicorn children")),
    *((name, (name,)) for name in SERVICES),
)


@dataclass
class Made:
    """What this run made, so that its end removes exactly that."""

    users: list[str] = field(default_factory=list)
    slurm_users: list[str] = field(default_factory=list)
    account: bool = False
    database_url: str = ""
    env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)


@dataclass
class Window:
    """One measured run: its column heading, jobs, seconds, CPU seconds per group, latencies."""

    heading: tuple[str, str]
    jobs: int
    seconds: float
    cpu: dict[str, float]
    latencies: list[float] = field(default_factory=list)
    end_to_end: float = 0.0  # the first click to the last Slurm id recorded


def run(command: list[str], check: bool = True, **options) -> str:
    """Run a command, its output captured; with `check`, one that fails stops the benchmark with what it said."""
    answer = subprocess.run(command, capture_output=True, text=True, check=False, **options)
    if check and answer.returncode != 0:
        raise SystemExit(f"{' '.join(command[:8])} ... failed ({answer.returncode}): {answer.stderr.strip()[-2000:]}")
    return answer.stdout


def users_make(count: int, made: Made) -> list[str]:
    """bench001..benchNNN: lab users in `students` (the sudoers rule's group); those missing are made."""
    names = [f"bench{number:03d}" for number in range(1, count + 1)]
    existing = {line.split(":", 1)[0] for line in Path("/etc/passwd").read_text().splitlines()}
    for name in names:
        if name not in existing:
            run(["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--groups", "students", name])
            made.users.append(name)
    return names


def account_make(names: list[str], made: Made) -> None:
    """The course's account, held with GrpJobs=0 (its jobs wait, never run), and an association per student."""
    known = set(run(["sacctmgr", "-n", "-P", "show", "user", "format=user"]).split())
    made.account = True  # made now, or left by an interrupted run: the benchmark's own name either way
    run(["sacctmgr", "-i", "add", "account", ACCOUNT, "Description=bench_burst", "Organization=bench"], check=False)
    run(["sacctmgr", "-i", "modify", "account", ACCOUNT, "set", "GrpJobs=0"], check=False)  # when it existed
    made.slurm_users = [name for name in names if name not in known]
    for start in range(0, len(names), 100):
        run(["sacctmgr", "-i", "add", "user", ",".join(names[start : start + 100]), f"account={ACCOUNT}"], check=False)
    rows = run(["sacctmgr", "-n", "-P", "show", "assoc", f"account={ACCOUNT}", "format=cluster,user,grpjobs"])
    own = [row.split("|") for row in rows.split() if row.split("|")[1] == ""]  # the account's, not a user's
    if not own or any(limit != "0" for _, _, limit in own):
        raise SystemExit(f"the account {ACCOUNT} is not held with GrpJobs=0: {own}")


def as_worker(command: list[str], stdin=subprocess.DEVNULL) -> str:
    """Run a command as the worker runs one (slurm.runner): as the service account, in a session of its own (no
    terminal), with the runner's environment; its output piped."""
    from slurm.runner import BASE_ENV

    account = pwd.getpwnam(benchlib.SERVICE_ACCOUNT)
    groups = os.getgrouplist(account.pw_name, account.pw_gid)
    return run(
        command,
        stdin=stdin,
        env=BASE_ENV,
        cwd=benchlib.REPO,
        start_new_session=True,
        user=account.pw_uid,
        group=account.pw_gid,
        extra_groups=groups,
    )


def folders_provision(names: list[str], job_root: Path) -> None:
    """Each student's folder in the job root, made as the worker has it made before a student's first job."""
    from django.conf import settings

    for name in names:
        as_worker(["sudo", "-n", "-u", "root", settings.LABQUEUE_JOBDIR_HELPER, "provision", str(job_root), name])


def job_script() -> str:
    """The script a job of the benchmark's assignment gets (jobs.services._job_script)."""
    from courses.scripting import Resources, render_script

    resources = Resources(gpus=0, cpus=1, mem_mb=100, minutes=1)
    return render_script(body=BODY, values={}, resources=resources, label="BURST: Deadline burst")


RUNUSER = ("runuser", "-u", "{user}", "--")
SUDO = ("sudo", "-n", "-u", "{user}")  # the run-as prefix without the helper (run by root: no sudoers rule needed)
HELPER = "sudo -n -u <student> helper"


def runuser_submit(names: list[str], script: str, run_as: tuple[str, ...] = RUNUSER) -> None:
    """sbatch as each student through runuser (or sudo), with the options the portal gives (logs to /dev/null)."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder).chmod(0o755)  # the students read the script
        path = Path(folder) / "job.sh"
        path.write_text(script)
        for number, name in enumerate(names):
            options = [f"--account={ACCOUNT}", f"--job-name=lq-bench-raw-{number}", "--chdir=/tmp"]
            options += ["--output=/dev/null", "--error=/dev/null", f"--partition={PARTITION}", str(path)]
            command = [part.format(user=name) for part in run_as] + ["sbatch", "--parsable", "--export=NONE", *options]
            run(command, start_new_session=True)


def helper_submit(names: list[str], script: str, job_root: Path) -> None:
    """The worker's command for each student's job: sudo, the helper's `submit` with the job's file list on
    stdin, then sbatch (jobs.workdir.workdir_submit, slurm.commands.submit)."""
    from django.conf import settings

    import slurm
    from courses.scripting import SCRIPT_NAME, STDERR_NAME, STDOUT_NAME

    data = script.encode()
    for name in names:
        job_uuid = str(uuid.uuid4())
        workdir = job_root / name / job_uuid
        command = ["sudo", "-n", "-u", name, settings.LABQUEUE_JOBDIR_HELPER, "submit", slurm.sbatch_path()]
        command += [str(job_root), name, job_uuid, "--parsable", "--export=NONE", f"--account={ACCOUNT}"]
        command += [f"--job-name=lq-{job_uuid}", f"--chdir={workdir}", f"--output={workdir / STDOUT_NAME}"]
        command += [f"--error={workdir / STDERR_NAME}", f"--partition={PARTITION}", str(workdir / SCRIPT_NAME)]
        with tempfile.TemporaryFile() as listing:
            listing.write(f"{len(data)} {SCRIPT_NAME}\n".encode() + data)
            listing.seek(0)
            as_worker(command, stdin=listing)


def cpu_groups(portal: dict[str, subprocess.Popen]) -> dict[str, float]:
    """CPU seconds so far per group: the services by name, each portal process by its session (its own, and
    its reaped children's), this script's own ("this script") and its reaped children's ("commands")."""
    table = benchlib.processes_cpu()
    groups = {name: sum(p.own + p.children for p in table if p.name in names) for name, names in SERVICES.items()}
    for name, process in portal.items():
        members = [p for p in table if p.session == process.pid]
        groups[name] = sum(p.own for p in members)
        groups[f"{name} children"] = sum(p.children for p in members)
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    groups["this script"] = mine.ru_utime + mine.ru_stime
    groups["commands"] = children.ru_utime + children.ru_stime
    return groups


def measure(heading: tuple[str, str], jobs: int, portal: dict, action) -> Window:
    """Run `action` (it returns latencies and the end-to-end seconds, or nothing) and what every group used."""
    before, clock = cpu_groups(portal), time.monotonic()
    latencies, end_to_end = action() or ([], 0.0)
    seconds = time.monotonic() - clock
    after = cpu_groups(portal)
    used = {group: after[group] - before[group] for group in after if group in before}
    return Window(heading, jobs, seconds, used, latencies, end_to_end or seconds)


def references(names: list[str], script: str, job_root: Path, when: str) -> list[Window]:
    """The three references, one after the other, each job cancelled after its run."""
    count = len(names)
    raw = measure(("runuser", when), count, {}, lambda: runuser_submit(names, script))
    jobs_cancel()
    sudo = measure(("sudo", when), count, {}, lambda: runuser_submit(names, script, run_as=SUDO))
    jobs_cancel()
    helper = measure(("helper", when), count, {}, lambda: helper_submit(names, script, job_root))
    jobs_cancel()
    shown = (raw, "runuser -u <student> -- sbatch"), (sudo, "sudo -n -u <student> sbatch"), (helper, HELPER)
    for window, command in shown:
        commands = window.cpu["commands"] * 1000 / count
        everything = sum(value for group, value in window.cpu.items() if group != "this script") * 1000 / count
        print(
            f"  {command + ' ...':<40} {when:<6} {count / window.seconds:6.1f} submissions/s  CPU {commands:5.1f} "
            f"ms/job in the command, {everything:5.1f} ms/job all processes  ({count} one after another)"
        )
    return [raw, sudo, helper]


def helper_startup(count: int) -> None:
    """The helper's start-up alone, N times each, one after another (no sudo, no sbatch): the system Python with
    nothing to run, the helper's code run as a script (compiled on every run, as the helper was installed
    before), and the installed helper (its launcher, importing the code compiled at install). CPU ms per start."""
    from django.conf import settings

    helper = Path(settings.LABQUEUE_JOBDIR_HELPER)
    python, code = ["/usr/bin/python3", "-IS"], str(helper.with_name("labqueue_jobdir.py"))
    starts = (
        ("the system Python alone (python3 -IS -c pass)", [*python, "-c", "pass"]),
        ("the helper's code run as a script (compiled each run)", [*python, code]),
        ("the installed helper (its code compiled at install)", [str(helper)]),
    )
    for what, argv in starts:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        for _ in range(count):
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(f"  {what:<56} CPU {used * 1000 / count:5.1f} ms per start  ({count} one after another)")


def jobs_cancel() -> None:
    """Cancel every job in the benchmark's account; wait until Slurm lists none of them live."""
    subprocess.run(["scancel", f"--account={ACCOUNT}"], capture_output=True, check=False)
    limit = time.monotonic() + 120
    while run(["squeue", "-h", f"--account={ACCOUNT}", "-t", "PENDING,RUNNING,COMPLETING", "-o", "%i"]).strip():
        if time.monotonic() > limit:
            raise SystemExit(f"jobs in {ACCOUNT} still live 120 s after scancel")
        time.sleep(0.5)


def portal_data(names: list[str]):
    """The benchmark's course (on the held account), its assignment, and a portal student per lab user."""
    from courses.models import Assignment, Course, Role
    from portal.models import User

    course = Course.objects.create(
        slug="burst",
        code="BURST",
        title="Deadline burst",
        term="-",
        slurm_account=ACCOUNT,
        partition=PARTITION,
        max_gpus_per_job=0,
        max_queued_jobs_per_student=5,
        max_running_jobs_per_student=5,
    )
    assignment = Assignment.objects.create(
        course=course, slug="burst", title="Deadline burst", script_template=BODY, gpus=0, cpus=1, mem_mb=100, minutes=1
    )
    User.objects.bulk_create([User(username=name, netid=name, password="!") for name in names])
    users = list(User.objects.filter(username__in=names).order_by("username"))
    course.enrollments.bulk_create([course.enrollments.model(course=course, user=u, role=Role.STUDENT) for u in users])
    return course, assignment, users


def browsers_open(users) -> list:
    """A browser per student, signed in (a session made as a login makes it)."""
    import requests
    from django.conf import settings
    from django.test import Client

    browsers = []
    for user in users:
        login = Client()
        login.force_login(user)
        browser = requests.Session()
        browser.cookies.set(settings.SESSION_COOKIE_NAME, login.cookies[settings.SESSION_COOKIE_NAME].value)
        browsers.append(browser)
    return browsers


def forms_open(browsers: list, page_url: str) -> list[tuple]:
    """Each student opens the assignment page (8 at a time): their browser and the form's fields to post."""

    def one(browser) -> tuple:
        page = browser.get(page_url, timeout=300)
        if page.status_code != 200:
            raise SystemExit(f"the assignment page answered {page.status_code}")
        fields = dict(re.findall(r'name="(csrfmiddlewaretoken|submission_key)" value="([^"]+)"', page.text))
        return browser, {**FORM, **fields}

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, browsers))


def click(form: tuple, page_url: str) -> tuple[float, str]:
    """Post the form (Submit job): when it was clicked, and the job's uuid from the redirect to its page."""
    browser, fields = form
    # A new connection, as after a student has read the page for a while: the one the page came on may be
    # closed by the server (keepalive) at the moment the post is sent on it, which no client retries.
    browser.close()
    clicked = time.time()
    answer = browser.post(page_url, data=fields, headers={"Referer": page_url}, timeout=300, allow_redirects=False)
    if answer.status_code != 302:
        raise SystemExit(f"the form answered {answer.status_code}: {answer.text[-2000:]}")
    return clicked, answer.headers["Location"].rstrip("/").rsplit("/", 1)[1]


def burst_ready(forms: list[tuple], page_url: str, clients: int):
    """Start the clients, each waiting for one signal to post; with fewer clients than students, each posts the
    next student's form when its last was answered. Returns what gives the signal and collects the clicks."""
    go = threading.Event()

    def one(form: tuple) -> tuple[float, str]:
        go.wait()
        return click(form, page_url)

    pool = ThreadPoolExecutor(max_workers=clients)
    futures = [pool.submit(one, form) for form in forms]
    time.sleep(2)  # every client started and waiting

    def release() -> list[tuple[float, str]]:
        go.set()
        clicks = [future.result() for future in futures]
        pool.shutdown()
        return clicks

    return release


def deadline(forms: list[tuple], page_url: str, spread: float, seed: int) -> list[tuple[float, str]]:
    """Each student posts at its own moment, drawn uniformly over `spread` seconds."""
    draw = random.Random(seed)
    moments = [draw.uniform(0, spread) for _ in forms]
    start = time.time() + 1

    def one(item: tuple) -> tuple[float, str]:
        form, moment = item
        time.sleep(max(0.0, start + moment - time.time()))
        return click(form, page_url)

    with ThreadPoolExecutor(max_workers=len(forms)) as pool:
        return list(pool.map(one, zip(forms, moments, strict=True)))


def wait_until(done, what: str, seconds: float = 600) -> None:
    limit = time.monotonic() + seconds
    while not done():
        if time.monotonic() > limit:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def recorded(clicks: list[tuple[float, str]]) -> tuple[list[float], float]:
    """Wait until the portal recorded a Slurm id for every click's job (or refused it): click -> submitted_at per
    job, and the first click to the last id."""
    from jobs.models import Job, Status

    by_uuid = dict(Job.objects.filter(uuid__in=[job_uuid for _, job_uuid in clicks]).values_list("uuid", "pk"))
    ids = [by_uuid[uuid.UUID(job_uuid)] for _, job_uuid in clicks]
    waiting = Job.objects.filter(pk__in=ids, status__in=[Status.QUEUED, Status.SUBMITTING])
    wait_until(lambda: not waiting.exists(), "the portal to send the jobs")
    rows = Job.objects.filter(pk__in=ids).values_list("pk", "submitted_at", "status", "message")
    sent = {pk: at.timestamp() for pk, at, _, _ in rows if at is not None}
    refused = [(pk, status, message) for pk, at, status, message in rows if at is None]
    if refused:
        print(f"  {len(refused)} job(s) not sent, e.g. {refused[0]}")
    latencies = [sent[pk] - clicked for (clicked, _), pk in zip(clicks, ids, strict=True) if pk in sent]
    return latencies, max(sent.values()) - min(clicked for clicked, _ in clicks)


def portal_settle(assignment) -> None:
    """After jobs_cancel: wait until the portal's sync recorded every job's end (and read what it used)."""
    from jobs.models import ACTIVE_IN_SLURM, FINISHED_SLURM, Job

    live = Job.objects.filter(assignment=assignment, status__in=ACTIVE_IN_SLURM)
    unread = Job.objects.filter(assignment=assignment, status__in=FINISHED_SLURM, usage_collected_at=None)
    wait_until(lambda: not live.exists() and not unread.exists(), "the sync to record the cancelled jobs", 120)


def portal_runs(options: argparse.Namespace, names: list[str], made: Made) -> list[Window]:
    """The burst, then (the burst's jobs cancelled and seen ended) the deadline, through the portal."""
    course, assignment, users = portal_data(names)
    browsers = browsers_open(users)
    made.processes, port = benchlib.portal_start(made.env, Path(made.env["BENCH_RUN_DIR"]))
    page_url = f"http://127.0.0.1:{port}/courses/{course.slug}/assignments/{assignment.slug}/"
    count = len(users)
    clients = min(options.clients or count, count)
    shape = f"{count} at once" if clients == count else f"{clients} clients"
    windows = floors(made, browsers[0], port, count)
    release = burst_ready(forms_open(browsers, page_url), page_url, clients)
    windows.append(measure(("burst", shape), count, made.processes, lambda: recorded(release())))
    if clients == count:
        print(f"  burst: {count} students post the form at the same moment ({count} HTTP clients, pages opened before)")
    else:
        print(f"  burst: {count} students' forms posted by {clients} clients, each posting again when answered")
    print_latencies(windows[-1], rate=True)
    if options.spread:
        jobs_cancel()
        portal_settle(assignment)
        forms = forms_open(browsers, page_url)

        def clicks_over_spread() -> tuple[list[float], float]:
            return recorded(deadline(forms, page_url, options.spread, options.seed))

        windows.append(measure(("deadline", f"over {options.spread:g} s"), count, made.processes, clicks_over_spread))
        print(
            f"  deadline: the same {count} students, each at its own random moment over {options.spread:g} s "
            f"(uniform, seed {options.seed}; pages opened before)"
        )
        print_latencies(windows[-1], rate=False)
    return windows


def celery_floor(count: int, log: Path) -> None:
    """`count` tasks that do nothing, sent to the submit worker's queue as the web side sends a job's; returns when
    the worker's log says it ran them all."""
    from portal.celery import app

    for number in range(count):
        app.send_task("celery.accumulate", args=(number,), queue="submit")
    done = "celery.accumulate"
    limit = time.monotonic() + 120
    while sum(done in line and "succeeded" in line for line in log.read_text(errors="replace").splitlines()) < count:
        if time.monotonic() > limit:
            raise SystemExit(f"the submit worker did not run {count} empty tasks in 120 s (see {log})")
        time.sleep(0.2)


def web_floor(browser, url: str, count: int) -> None:
    """`count` requests for /healthz, one after another."""
    for _ in range(count):
        if browser.get(url, timeout=30).status_code != 200:
            raise SystemExit(f"{url} did not answer 200")


def floors(made: Made, browser, port: int, count: int) -> list[Window]:
    """The stack's own cost per job, measured in the running portal before the burst (see the docstring, 1b)."""
    run_dir = Path(made.env["BENCH_RUN_DIR"])
    celery = measure(("floor", "Celery"), count, made.processes, lambda: celery_floor(count, run_dir / "submit.log"))
    web = measure(
        ("floor", "request"),
        count,
        made.processes,
        lambda: web_floor(browser, f"http://127.0.0.1:{port}/healthz", count),
    )
    rows = (
        (celery, "an empty Celery task on the submit queue", ("submit", "Redis")),
        (web, "a request for /healthz, one after another", ("gunicorn", "PostgreSQL")),
    )
    for window, what, groups in rows:
        parts = ", ".join(f"{group} {window.cpu.get(group, 0.0) * 1000 / count:.1f}" for group in groups)
        everything = sum(value for group, value in window.cpu.items() if group != "this script") * 1000 / count
        print(f"  floor: {what:<44} CPU {everything:5.1f} ms each, all processes ({parts}; {count} of them)")
    return [celery, web]


def print_latencies(window: Window, *, rate: bool) -> None:
    line = f"    click -> Slurm id recorded: {benchlib.summary(window.latencies)}"
    if rate:
        seconds = window.end_to_end
        line += f"; end to end {window.jobs} jobs in {seconds:.1f} s = {window.jobs / seconds:.1f} jobs/s"
    print(line)


def cpu_cells(groups: tuple[str, ...], windows: list[Window]) -> list[float | None]:
    """A table row: the groups' CPU ms per job in each window, None where none of them ran."""
    cells = []
    for window in windows:
        present = [window.cpu[group] for group in groups if group in window.cpu]
        cells.append(sum(present) * 1000 / window.jobs if present else None)
    return cells


def print_cpu(windows: list[Window]) -> None:
    print()
    print("CPU ms per submitted job, per process group: utime + stime of each process from /proc/<pid>/stat before")
    print("and after each run, with the children it reaped (cutime + cstime); columns as above")
    for line in (0, 1):
        print(f"{'':<28}" + "".join(f"{window.heading[line]:>13}" for window in windows))
    totals = [0.0] * len(windows)
    for label, groups in ROWS:
        cells = cpu_cells(groups, windows)
        totals = [total + (cell or 0.0) for total, cell in zip(totals, cells, strict=True)]
        print(f"{label:<28}" + "".join(f"{'-' if cell is None else f'{cell:.1f}':>13}" for cell in cells))
    print(f"{'total':<28}" + "".join(f"{total:>13.1f}" for total in totals))
    mine = cpu_cells(("this script",), windows)
    print(f"{'the load (this script)':<28}" + "".join(f"{cell:>13.1f}" for cell in mine) + "  (not in total)")
    print(f"{'seconds measured':<28}" + "".join(f"{window.seconds:>13.1f}" for window in windows))
    print("* runuser + sbatch in the runuser columns, sudo + sbatch in the sudo columns; sudo + helper + sbatch in")
    print("  the others (the submit worker's children in the portal's). The portal's columns include what beat ran")
    print("  meanwhile (sync every 5 s); the floor columns count per empty task and per request.")


def print_floor(windows: list[Window]) -> None:
    """What any submitted job costs at least in this stack: the run-as prefix and sbatch, a Celery task, and a
    request (each all processes, averaged over the runs measured), beside the portal's own figure."""

    def per_job(*headings: tuple[str, str]) -> float:
        chosen = [window for window in windows if window.heading in headings]
        used = [sum(v for group, v in window.cpu.items() if group != "this script") / window.jobs for window in chosen]
        return sum(used) * 1000 / len(used)

    parts = {
        "sudo -n -u <student> sbatch": per_job(("sudo", "before"), ("sudo", "after")),
        "an empty Celery task": per_job(("floor", "Celery")),
        "a request for /healthz": per_job(("floor", "request")),
    }
    burst = next(window for window in windows if window.heading[0] == "burst")
    print()
    print(
        "The stack's floor per job, CPU ms in all processes: " + " + ".join(f"{v:.1f} ({k})" for k, v in parts.items())
    )
    portal = per_job(burst.heading)
    print(f"  = {sum(parts.values()):.1f} ms with no query, no file and no check; the portal's burst: {portal:.1f} ms")


def portal_stop(made: Made) -> None:
    for process in made.processes.values():
        benchlib.stop(process)
    made.processes = {}


def database_remove(database_url: str) -> None:
    from django.db import connections

    connections.close_all()
    benchlib.database_drop(database_url)


def slurm_remove(made: Made) -> None:
    """The Slurm users this run added, then the account with every association left in it."""
    for start in range(0, len(made.slurm_users), 100):
        run(["sacctmgr", "-i", "delete", "user", "where", f"name={','.join(made.slurm_users[start : start + 100])}"])
    run(["sacctmgr", "-i", "delete", "account", ACCOUNT])


def users_remove(names: list[str]) -> None:
    for name in names:
        run(["userdel", name])


def cleanup(made: Made) -> None:
    """Remove what the run made, each step whatever became of the others."""
    portal_stop(made)
    steps = [jobs_cancel] if made.account else []
    if made.env:
        steps += [lambda: benchlib.run_dir_remove(made.env), benchlib.redis_flush]
    if made.database_url:
        steps.append(lambda: database_remove(made.database_url))
    if made.account:
        steps.append(lambda: slurm_remove(made))
    steps.append(lambda: users_remove(made.users))
    for step in steps:
        try:
            step()
        except Exception as error:  # the next steps still run; say what was left
            print(f"cleanup: {error!r}")
    database, redis_db = made.database_url.rsplit("/", 1)[-1], benchlib.REDIS_URL.rsplit("/", 1)[-1]
    print(
        f"Removed: the jobs in {ACCOUNT}, {len(made.users)} lab users, {len(made.slurm_users)} Slurm users and the "
        f"account {ACCOUNT}, the database {database}, the contents of Redis DB {redis_db}."
    )


def bench(options: argparse.Namespace, made: Made) -> None:
    names = users_make(options.students, made)
    account_make(names, made)
    made.database_url = benchlib.database_url_named("burst")
    benchlib.database_drop(made.database_url)  # left by an interrupted run
    made.env = benchlib.setup_django(
        database_url=made.database_url, LABQUEUE_DEMO="0", LABQUEUE_DEBUG="0", LABQUEUE_LOG_FORMAT="json"
    )
    benchlib.redis_flush()
    job_root = Path(made.env["LABQUEUE_JOB_ROOT"])
    folders_provision(names, job_root)
    print(
        f"{len(names)} students (lab users bench001..bench{len(names):03d}, {len(made.users)} made for this run) "
        f"on {os.cpu_count()} cores; every job held in the Slurm account {ACCOUNT} (GrpJobs=0: PENDING, never runs)."
    )
    print(
        "The portal as the systemd units start it: deploy/entrypoint web (gunicorn, deploy/gunicorn.conf.py), "
        f"worker submit|sync|maintenance, beat, as {benchlib.SERVICE_ACCOUNT}; JSON logs in {made.env['BENCH_RUN_DIR']}"
    )
    script = job_script()
    print(f"References, one command per job, one after another, as the worker runs it (no terminal), N = {len(names)}:")
    windows = references(names, script, job_root, "before")
    print("The helper's start-up alone, as root (no sudo, no sbatch):")
    helper_startup(len(names))
    print("Portal, each student its own signed-in HTTP client:")
    windows += portal_runs(options, names, made)
    portal_stop(made)
    jobs_cancel()
    print("References again, the portal stopped:")
    windows += references(names, script, job_root, "after")
    print_cpu(windows)
    print_floor(windows)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300, help="students (lab users bench001..), 1 to 999")
    parser.add_argument("--clients", type=int, default=0, help="HTTP clients posting at once in the burst (all)")
    parser.add_argument("--spread", type=float, default=60, help="seconds the deadline spreads over (0: none)")
    parser.add_argument("--seed", type=int, default=1, help="of the deadline's random moments")
    options = parser.parse_args()
    if not 1 <= options.students <= 999:
        parser.error("--students must be 1 to 999")
    return options


def main() -> None:
    options = arguments()
    benchlib.root_required()
    made = Made()
    try:
        bench(options, made)
    finally:
        cleanup(made)


if __name__ == "__main__":
    main()
