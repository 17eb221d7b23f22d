"""Running the portal's own code as its unprivileged service account, `labqueue`, in a real process.

scripts/labcluster creates the account, the `students` group it may act as, the sudoers rule from
deploy/sudoers.labqueue and the job-directory helper, as a site would (README, "Privilege model").
A process started here has real uid and gid `labqueue` (sudo judges the real uid, so an effective-uid
switch inside the test process would prove nothing). It sees only committed rows: tests that use it
take `transactional_db`.
"""

import os
import pwd
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

SERVICE_ACCOUNT = "labqueue"
REPO = Path(__file__).resolve().parent.parent
MEDIA_BASE = Path("/var/lib/labqueue/test-media")


@pytest.fixture
def service_media(settings) -> Iterator[Path]:
    """A media root the service account owns, as in production (pytest's tmp_path is root's alone)."""
    account = pwd.getpwnam(SERVICE_ACCOUNT)
    MEDIA_BASE.mkdir(parents=True, exist_ok=True)
    root = MEDIA_BASE / uuid.uuid4().hex[:12]
    root.mkdir(mode=0o750)
    os.chown(root, account.pw_uid, account.pw_gid)
    settings.MEDIA_ROOT = root
    yield root
    shutil.rmtree(root, ignore_errors=True)


def service_env(settings, **extra: str) -> dict[str, str]:
    """The environment a deployed portal process gets: this test's database, broker, job root and
    media root, and the production run-as prefix."""
    db = connection.settings_dict
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "LANG": "C.UTF-8",
        "HOME": "/var/lib/labqueue",
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "LABQUEUE_SECRET_KEY": settings.SECRET_KEY,
        "LABQUEUE_REDIS_URL": settings.CELERY_BROKER_URL,
        "LABQUEUE_JOB_ROOT": str(settings.LABQUEUE_JOB_ROOT),
        "LABQUEUE_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "LABQUEUE_JOBDIR_HELPER": settings.LABQUEUE_JOBDIR_HELPER,
        "LABQUEUE_SLURM_RUN_AS_PREFIX": "sudo -n -u {user}",
        "LABQUEUE_ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    env.update(extra)
    return env


def service_argv(*argv: str) -> list[str]:
    return ["/usr/sbin/runuser", "-u", SERVICE_ACCOUNT, "--", *argv]


def as_service_account(code: str, settings, *, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """Run Python `code` (Django set up) as the service account; fail the test if it does not finish
    within `timeout` seconds, which is how a blocked worker shows."""
    program = "import django\ndjango.setup()\n" + code
    try:
        result = subprocess.run(
            service_argv(sys.executable, "-c", program),
            env=service_env(settings, **env),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the portal's process as {SERVICE_ACCOUNT} blocked for {timeout} s: {expired.stderr}")
    return result


def dispatch_as_service_account(job_id: int, settings, **env: str) -> subprocess.CompletedProcess:
    """What the Celery submit task runs, as the service account (its retries run at once)."""
    result = as_service_account(
        f"from jobs.tasks import job_dispatch\njob_dispatch.apply(args=[{job_id}])\n", settings, **env
    )
    assert result.returncode == 0, result.stderr
    return result
