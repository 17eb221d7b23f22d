"""Running the portal's own code as its unprivileged service account, `labqueue`, in a real process.

scripts/labcluster creates the account, the `students` group it may act as, the sudoers rule from
deploy/sudoers.labqueue and the job-directory helper, as a site would (README, "Privilege model").
A process started here has real uid and gid `labqueue` (sudo judges the real uid, so an effective-uid
switch inside the test process would prove nothing). It sees only committed rows: tests that use it
take `transactional_db`.
"""

import io
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client

from tests.helper_install import jobdir_helper_install
from tests.lab import TEST_SITE_CEILINGS

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
        **{name: str(getattr(settings, name)) for name in TEST_SITE_CEILINGS},  # as this test's settings say
    }
    if "MUTANT_UNDER_TEST" in os.environ:  # mutation testing (scripts/mutate): the portal's processes run it too
        env["MUTANT_UNDER_TEST"] = os.environ["MUTANT_UNDER_TEST"]
    env.update(extra)
    return env


def service_argv(*argv: str) -> list[str]:
    return ["/usr/sbin/runuser", "-u", SERVICE_ACCOUNT, "--", *argv]


def service_process(code: str, settings, **env: str) -> subprocess.Popen:
    """Start Python `code` (Django set up) as the service account, its output captured."""
    program = "import django\ndjango.setup()\n" + code
    return subprocess.Popen(
        service_argv(sys.executable, "-c", program),
        env=service_env(settings, **env),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def as_service_account(code: str, settings, *, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """Run Python `code` (Django set up) as the service account; fail the test if it does not finish
    within `timeout` seconds, which is how a blocked worker shows."""
    process = service_process(code, settings, **env)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"the portal's process as {SERVICE_ACCOUNT} blocked for {timeout} s: {process.communicate()[1]}")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


#: How an older job-directory helper, without the `remove` mode, answers it (its usage line names `prepare` alone).
OLD_HELPER = "failed (2): usage: labqueue-jobdir prepare"


def manage_in_process(*args: str) -> subprocess.CompletedProcess:
    """`manage.py ARGS` run in this test process (as root), where coverage measures it. Only for commands whose
    privileges do not matter to the test: what they do as a student still goes through the run-as prefix."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except CommandError as error:
        err.write(f"{error}\n")
        code = error.returncode
    except SystemExit as exit:
        code = exit.code or 0
    return subprocess.CompletedProcess(["manage.py", *args], code, out.getvalue(), err.getvalue())


def manage_as_service_account(settings, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`manage.py ARGS` as the service account, as an operator (or the worker) runs it.

    The job-directory helper lives at the one path the sudoers rule names, shared by every checkout on this
    machine: a test run of an older checkout starting meanwhile puts back a helper without `remove` (which
    then removes nothing). Only then is the command run again, with this checkout's helper installed again."""
    for _ in range(3):
        jobdir_helper_install()
        done = subprocess.run(
            service_argv(sys.executable, "manage.py", *args),
            env=service_env(settings),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if OLD_HELPER not in done.stderr or "labqueue-jobdir remove <job root>" in done.stderr:
            break
    return done


def dispatch_as_service_account(job_id: int, settings, **env: str) -> subprocess.CompletedProcess:
    """What the Celery submit task runs, as the service account (its retries run at once)."""
    result = as_service_account(
        f"from jobs.tasks import job_dispatch\njob_dispatch.apply(args=[{job_id}])\n", settings, **env
    )
    assert result.returncode == 0, result.stderr
    return result


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(argv: list[str], env: dict[str, str], log: Path, cwd: Path = REPO) -> subprocess.Popen:
    """Start a process in its own session (so `stop` ends everything it started), its output in `log`."""
    with open(log, "ab") as handle:
        return subprocess.Popen(argv, env=env, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Stop a process and everything it started (its own session)."""
    try:
        os.killpg(process.pid, sig)
        process.wait(timeout=20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@dataclass
class Portal:
    """Portal processes running as the service account, and their logs."""

    settings: object
    logs: Path
    env: dict[str, str]
    base: str = ""
    web: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)

    def start_worker(self, queues: str = "submit,sync,celery", **env: str) -> subprocess.Popen:
        """A Celery worker consuming `queues` (all of them by default: submits, syncs and maintenance)."""
        bin_dir = Path(sys.executable).parent
        argv = [str(bin_dir / "celery"), "-A", "portal", "worker", "-Q", queues, "--concurrency=1", "--without-mingle"]
        argv += ["--without-gossip", "--loglevel=INFO", f"--hostname=w{len(self.workers)}@%h"]
        worker = _start(service_argv(*argv), {**self.env, **env}, self.logs / "worker.log")
        self.workers.append(worker)
        return worker

    def start_beat(self, name: str = "beat") -> subprocess.Popen:
        """Celery beat; a second one (another `name`, its own schedule file) is beat started twice by mistake."""
        bin_dir = Path(sys.executable).parent
        schedule = Path(self.env["LABQUEUE_MEDIA_ROOT"]) / f"celerybeat-schedule-{name}"
        argv = [str(bin_dir / "celery"), "-A", "portal", "beat", "--loglevel=INFO", f"--schedule={schedule}"]
        beat = _start(service_argv(*argv), self.env, self.logs / f"{name}.log")
        self.workers.append(beat)
        return beat

    def browser_for(self, user) -> requests.Session:
        """A browser signed in as `user` (a session stored in the database the web server reads)."""
        login = Client()
        login.force_login(user)
        browser = requests.Session()
        name = django_settings.SESSION_COOKIE_NAME
        browser.cookies.set(name, login.cookies[name].value)
        return browser

    def submit(
        self, browser: requests.Session, course: str, assignment: str, data: dict, files=()
    ) -> requests.Response:
        page = browser.get(f"{self.base}/courses/{course}/assignments/{assignment}/", timeout=30)
        assert page.status_code == 200, page.text[:2000]
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return browser.post(
            f"{self.base}/jobs/submit/{course}/{assignment}/",
            data={**data, "csrfmiddlewaretoken": token},
            files=list(files),
            headers={"Referer": page.url},
            timeout=30,
            allow_redirects=False,
        )

    def server_errors(self) -> list[str]:
        """Lines of the web server's log that answered HTTP 500 or report an unhandled error (a 503 from
        /readyz is an answer, not an error)."""
        text = (self.logs / "web.log").read_text(errors="replace")
        return [line for line in text.splitlines() if re.search(r'" 500 |Internal Server Error', line)]


@contextmanager
def running_portal(settings, logs: Path, *, workers: int = 1, **env: str) -> Iterator[Portal]:
    """gunicorn and Celery workers as `labqueue`, on this test's database, broker and job root."""
    portal = Portal(settings=settings, logs=logs, env=service_env(settings, **env))
    port = free_port()
    bin_dir = Path(sys.executable).parent
    web_argv = [str(bin_dir / "gunicorn"), "portal.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    web_argv += ["--workers", "2", "--access-logfile", "-", "--no-control-socket"]
    portal.web = _start(service_argv(*web_argv), portal.env, logs / "web.log")
    for _ in range(workers):
        portal.start_worker()
    portal.base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(portal.base + "/", timeout=10)
                break
            except requests.RequestException:
                assert time.monotonic() < deadline, (logs / "web.log").read_text()
                time.sleep(0.2)
        yield portal
        assert portal.server_errors() == [], "a person got an HTTP 500 (web.log above)"
    finally:
        for process in [portal.web, *portal.workers]:
            stop(process)
        for name in ("web.log", "worker.log"):
            if (logs / name).exists():
                print(f"--- {name}\n" + (logs / name).read_text(errors="replace")[-4000:])
