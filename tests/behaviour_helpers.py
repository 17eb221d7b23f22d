"""Shared helpers for the behaviour tests: ask the real Slurm (not the adapter) what it holds, clean up after.

Slurm is asked with its own tools (squeue, sacct, scontrol, sacctmgr) run directly, so a test that counts
Slurm's jobs does not trust the code it checks.
"""

from __future__ import annotations

import codecs
import importlib
import os
import pwd
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from jobs.staging import staging_dir
from portal.celery import app
from tests.conftest import dispatch, submit_form, wait_for_status
from tests.lab import lab_slurm_conf, slurm_tool
from tests.service_account import SERVICE_ACCOUNT

T = TypeVar("T")
SLURM_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
CS102_USERS = ["student1", "student2", "student3", "student4"]


def slurm(*argv: str, check: bool = True) -> str:
    """Run the lab's Slurm tool as root and return its stdout."""
    argv = (slurm_tool(argv[0]), *argv[1:])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=SLURM_ENV, cwd="/tmp")
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def slurm_job_ids(name: str) -> set[str]:
    """Every Slurm job with this name that slurmctld (squeue) or slurmdbd (sacct) knows."""
    live = slurm("squeue", "-h", "-a", "-t", "all", "-n", name, "-o", "%i").split()
    recorded = slurm("sacct", "-X", "-n", "-P", "-a", "--name", name, "-S", "2000-01-01", "-o", "JobID").split()
    return set(live) | set(recorded)


def squeue_field(job_id: str, field: str) -> str:
    """One squeue format field (%T state, %v reservation, %r reason, %p priority) of a live job."""
    return slurm("squeue", "-h", "-j", job_id, "-o", field).strip()


def sacct_state(job_id: str) -> str:
    return slurm("sacct", "-X", "-n", "-P", "-j", job_id, "-S", "2000-01-01", "-o", "State").strip()


def reservation_text(name: str) -> str:
    """`scontrol -o show reservation NAME`, or "" when Slurm has no such reservation."""
    return slurm("scontrol", "-o", "show", "reservation", name, check=False).strip() if name else ""


def assoc_fields(account: str, user: str, fields: str) -> str:
    """One association's fields, read back with sacctmgr (user "" is the account's own association)."""
    rows = slurm(
        "sacctmgr", "-n", "-P", "show", "assoc", "where", f"account={account}", "cluster=lab", f"format=User,{fields}"
    )
    for line in rows.splitlines():
        who, _, values = line.partition("|")
        if who == user:
            return values
    raise AssertionError(f"no association {account}/{user or '(account)'} in Slurm:\n{rows}")


def restore_cs102() -> None:
    """cs102 as scripts/labcluster makes it: student1-4 associated, no limits anywhere."""
    slurm("sacctmgr", "-i", "add", "user", ",".join(CS102_USERS), "account=cs102", "cluster=lab", check=False)
    slurm(
        "sacctmgr",
        "-i",
        "modify",
        "user",
        "where",
        f"name={','.join(CS102_USERS)}",
        "account=cs102",
        "cluster=lab",
        "set",
        "MaxJobs=-1",
        "MaxSubmitJobs=-1",
        "MaxTRES=cpu=-1,mem=-1,gres/gpu=-1",
        "MaxWall=-1",
        "GrpTRESMins=gres/gpu=-1",
        check=False,
    )
    slurm(
        "sacctmgr",
        "-i",
        "modify",
        "account",
        "where",
        "name=cs102",
        "cluster=lab",
        "set",
        "GrpTRES=gres/gpu=-1",
        check=False,
    )


def wait_until(check: Callable[[], T], *, timeout: float = 90, interval: float = 0.5, what: str = "") -> T:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or check}; last value {value!r}")
        time.sleep(interval)


def make_stale(job: Job, seconds: float | None = None) -> None:
    """Age a job's last change by `seconds` (default: past LABQUEUE_RESUBMIT_AFTER_SECONDS, as if its
    task had been lost that long ago)."""
    if seconds is None:
        seconds = settings.LABQUEUE_RESUBMIT_AFTER_SECONDS + 60
    old = timezone.now() - timedelta(seconds=seconds)
    Job.objects.filter(pk=job.pk).update(updated_at=old)


def slurm_conf_with(folder: Path, **settings: str | int) -> str:
    """A copy of the lab's slurm.conf (and gres.conf) in `folder` with some settings replaced, for
    SLURM_CONF. `folder` must be readable by the students: commands run as them read it too (pytest's
    tmp_path is not, and a Slurm tool that cannot read its configuration hangs until the runner's timeout)."""
    source = lab_slurm_conf()
    lines = [line for line in source.read_text().splitlines() if line.split("=", 1)[0] not in settings]
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    (folder / "slurm.conf").write_text("\n".join(lines + [f"{key}={value}" for key, value in settings.items()]) + "\n")
    (folder / "gres.conf").write_text((source.parent / "gres.conf").read_text())
    for name in ("slurm.conf", "gres.conf"):
        (folder / name).chmod(0o644)
    return str(folder / "slurm.conf")


def unreachable_controller(folder: Path) -> str:
    """A slurm.conf naming a controller port nobody listens on (as tests/jobs/test_transient.py does)."""
    return slurm_conf_with(folder, SlurmctldPort=1, MessageTimeout=2)


@contextmanager
def tasks_run_in_process() -> Iterator[None]:
    """`.delay()` runs the real task at once in this process (Celery's eager mode), so whatever a
    task enqueues has run when the call returns."""
    before = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = before


def research_job(
    *, gpus: int = 1, seconds: int = 300, minutes: int = 5, mem: int = 500, name: str = "lq-research", node: str = ""
) -> str:
    """A research group's GPU job outside any course (researcher1, account research), submitted with the
    lab's sbatch; its Slurm job id. The caller cancels it (cancel_slurm_jobs)."""
    argv = [
        "runuser",
        "-u",
        "researcher1",
        "--",
        slurm_tool("sbatch"),
        "--parsable",
        "--export=NONE",
        "--account=research",
        "--partition=gpu",
        *([f"--nodelist={node}"] if node else []),
        f"--gres=gpu:{gpus}",
        f"--mem={mem}",
        "-t",
        str(minutes),
        f"--job-name={name}",
        "--output=/dev/null",
        f"--wrap=sleep {seconds}",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd="/tmp", env=SLURM_ENV, check=True)
    return done.stdout.strip().split(";")[0]


def cancel_slurm_jobs(*, names: Sequence[str] = (), ids: Sequence[str] = ()) -> None:
    """scancel (as root) every job of these portal jobs, by name (duplicates too) and by id."""
    names = [*names, *(job.slurm_name for job in Job.objects.all())]
    ids = [*ids, *Job.objects.exclude(slurm_job_id="").values_list("slurm_job_id", flat=True)]
    for name in dict.fromkeys(names):
        slurm("scancel", "-n", name, check=False)
    if ids:
        slurm("scancel", *dict.fromkeys(ids), check=False)


@contextmanager
def slurm_cleanup(extra_ids: list[str] | None = None) -> Iterator[list[str]]:
    """Cancel, at the end and even on failure, every Slurm job of the test's portal jobs (and `extra_ids`),
    and drop any task the test left in the broker."""
    extra = extra_ids if extra_ids is not None else []
    try:
        yield extra
    finally:
        cancel_slurm_jobs(ids=extra)
        app.control.purge()


# What a request may load lazily. Loaded before switching to an unprivileged identity: this
# Python may live where that identity cannot read, and a codec lookup that fails is cached as a
# failure for the rest of the run (encodings.search_function), breaking later tests.
WARM_CODECS = (
    "ascii",
    "latin-1",
    "utf-8",
    "utf-16",
    "utf-32",
    "cp437",
    "idna",
    "punycode",
    "unicode_escape",
    "raw_unicode_escape",
    "charmap",
)
WARM_MODULES = ("zipfile", "zlib", "django.views.defaults", "django.views.debug", "django.views.csrf")


@contextmanager
def as_user(account: pwd.struct_passwd) -> Iterator[None]:
    """Run the block with the effective identity of an unprivileged account, so file permissions
    apply to it as they do to a portal process that is not root; root again afterwards."""
    for name in WARM_CODECS:
        codecs.lookup(name)
    for name in WARM_MODULES:
        importlib.import_module(name)
    groups = os.getgroups()
    os.setgroups([])
    os.setegid(account.pw_gid)
    os.seteuid(account.pw_uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)
        os.setgroups(groups)


def usage_caught_up(job: Job, seconds: float = 60) -> None:
    """Run the usage ingest (as its periodic task does) until the job's accounting record is copied: a
    record slurmdbd has only just received may miss one cycle's window and arrive with the next."""
    from reports.ingest import usage_ingest
    from reports.models import UsageRecord

    deadline = time.monotonic() + seconds
    usage_ingest()
    while not UsageRecord.objects.filter(slurm_job_id=job.slurm_job_id, job=job).exists():
        assert time.monotonic() < deadline, "the usage record never arrived"
        time.sleep(1)
        usage_ingest()


def uploaded_by_the_web_server(folder: Path) -> None:
    """The web server runs as the service account, so what it staged is the service account's (the test
    client ran the view as root)."""
    account = pwd.getpwnam(SERVICE_ACCOUNT)
    for path in [folder.parent, folder, *folder.rglob("*")]:
        os.chown(path, account.pw_uid, account.pw_gid)


def job_that_ran(client, student, *, uploads: dict[str, bytes] | None = None, days_ago: int = 0) -> Job:
    """A job the student submitted in the browser that ran on the cluster to completion, with its usage
    record copied in, ended `days_ago` days ago."""
    client.force_login(student)
    files = [SimpleUploadedFile(name, content) for name, content in (uploads or {}).items()]
    form = submit_form(**({"uploads": files} if files else {}))
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), form).status_code == 302
    job = Job.objects.latest("pk")
    if files:
        uploaded_by_the_web_server(staging_dir(str(job.uuid)))
    job = wait_for_status(dispatch(job), Status.COMPLETED)
    usage_caught_up(job)
    if days_ago:
        Job.objects.filter(pk=job.pk).update(ended_at=job.ended_at - timedelta(days=days_ago))
    job.refresh_from_db()
    return job


def account_deleted(account: str) -> bool:
    """Delete a Slurm account the test made (the account itself, not only its associations); True once it is gone.
    Slurm keeps an account while jobs of it are still in the queue ("Job(s) active"): call it in a wait_until."""
    slurm("sacctmgr", "-i", "delete", "account", account, check=False)
    return not slurm("sacctmgr", "-n", "-P", "show", "account", account, "format=account").strip()
