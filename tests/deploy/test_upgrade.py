"""Updating a running portal, and rolling back a release that is not ready, with jobs in flight.

Two checkouts of the project: the previous release (PREVIOUS, a commit of this repository's history) and this
one. Both run as the service account on one database of the test's own, with the worker, beat and gunicorn
started as README "Upgrades" says, step by step:

1. The previous release serves; students submit (jobs queued, pending, running).
2. A rollout of this release that cannot reach its broker: migrations run (expand only, so the previous web
   server keeps serving, and a student submits through it meanwhile), the new processes start, /readyz and
   `doctor` say the broker is unreachable, and the operator rolls back: the previous release's worker and beat
   start again on the migrated database. A student submits after the rollback.
3. The routine update: worker and beat stopped, migrate, the new worker and beat started, a new web server
   started before the old one is stopped. Students submit through the old web server during it and through
   the new one after.

Every job completes, each is exactly one Slurm job, and no web server answered HTTP 500.
"""

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest
import requests

from tests.behaviour_helpers import slurm_job_ids
from tests.http_helpers import form_fields, sign_in
from tests.service_account import REPO, _start, free_port, service_argv, service_env, stop

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]

#: The previous release: the commit before this release's migrations (courses 0006 keeps starter files per
#: assignment version). Its worker already submits through the helper's `submit`, the one sbatch the sudoers
#: rule allows; it does not provision students' folders (the test's job root has them, as after a first job).
PREVIOUS = "48648d5ba8c0212d478868d627189ac5045976cd"
RELEASES = Path("/var/lib/labqueue/test-releases")
BIN = Path(sys.executable).parent
ASSIGNMENT = "/courses/cs101-demo/assignments/gpu-hello/"
#: Where the previous release's assignment page posts its form (this release's posts to the page itself, and
#: still takes a POST at the old address, for a form opened before the update).
SUBMIT = "/jobs/submit/cs101-demo/gpu-hello/"


@dataclass
class Release:
    """One checkout's web server, worker and beat, as the service account."""

    code: Path
    env: dict[str, str]
    logs: Path
    name: str
    web: subprocess.Popen | None = None
    base: str = ""
    background: list[subprocess.Popen] = field(default_factory=list)

    def manage(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            service_argv(str(BIN / "python"), "manage.py", *argv),
            env=self.env,
            cwd=self.code,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def start_web(self) -> str:
        port = free_port()
        argv = [str(BIN / "gunicorn"), "portal.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "2"]
        self.web = _start(service_argv(*argv, "--access-logfile", "-"), self.env, self.log("web"), cwd=self.code)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(self.base + "/healthz", timeout=10)
                return self.base
            except requests.RequestException:
                assert time.monotonic() < deadline, self.log("web").read_text()
                time.sleep(0.2)

    def start_worker_and_beat(self) -> None:
        celery = [str(BIN / "celery"), "-A", "portal"]
        worker = [*celery, "worker", "--concurrency=2", "--loglevel=INFO", f"--hostname={self.name}@%h"]
        beat = [*celery, "beat", "--loglevel=INFO", f"--schedule={self.env['LABQUEUE_MEDIA_ROOT']}/beat-{self.name}"]
        for role, argv in (("worker", worker), ("beat", beat)):
            self.background.append(_start(service_argv(*argv), self.env, self.log(role), cwd=self.code))

    def stop_worker_and_beat(self) -> None:
        for process in self.background:
            stop(process)
        self.background = []

    def stop_web(self) -> None:
        if self.web is not None:
            stop(self.web)
            self.web = None

    def log(self, role: str) -> Path:
        return self.logs / f"{self.name}-{role}.log"

    def server_errors(self) -> list[str]:
        log = self.log("web")
        text = log.read_text(errors="replace") if log.exists() else ""
        return [line for line in text.splitlines() if re.search(r'" 500 |Internal Server Error|Traceback', line)]


@pytest.fixture
def previous_checkout() -> Iterator[Path]:
    """The previous release, checked out beside this one where the service account can read it."""
    RELEASES.mkdir(mode=0o755, parents=True, exist_ok=True)
    RELEASES.chmod(0o755)
    checkout = RELEASES / f"previous-{uuid.uuid4().hex[:8]}"
    git = ["git", "-c", f"safe.directory={REPO}", "-C", str(REPO)]
    added = subprocess.run(
        [*git, "worktree", "add", "--detach", str(checkout), PREVIOUS], capture_output=True, text=True
    )
    assert added.returncode == 0, added.stderr
    try:
        yield checkout
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(checkout)], capture_output=True)


def submit(browser: requests.Session, base: str) -> str:
    """Submit the demo assignment (8 one-second epochs) through the form as shown, to the address that release's
    form posts to; the job's uuid."""
    page = browser.get(base + ASSIGNMENT, timeout=60)
    assert page.status_code == 200, page.text[-2000:]
    action = SUBMIT if f'action="{SUBMIT}"' in page.text else ASSIGNMENT
    fields = {**form_fields(page.text, action=action), "EPOCHS": "8"}
    sent = browser.post(base + action, data=fields, headers={"Referer": page.url}, timeout=60, allow_redirects=False)
    assert sent.status_code == 302, sent.text[-2000:]
    return sent.headers["Location"].strip("/").split("/")[-1]


def jobs(database: str) -> dict[str, tuple[str, str]]:
    with psycopg.connect(database) as db:
        return {str(row[0]): (row[1], row[2]) for row in db.execute("SELECT uuid, status, slurm_job_id FROM jobs_job")}


def test_an_update_and_a_rolled_back_rollout_with_jobs_in_flight_lose_and_duplicate_nothing(
    settings, tmp_path, empty_database, previous_checkout
):
    database = empty_database
    env = service_env(
        settings,
        DATABASE_URL=database,
        LABQUEUE_LOCAL_PASSWORDS="1",
        LABQUEUE_SYNC_SECONDS="2",
        LABQUEUE_LOG_FORMAT="text",
    )
    previous = Release(previous_checkout, env, tmp_path, "previous")
    current = Release(REPO, env, tmp_path, "current")
    closed = f"redis://127.0.0.1:{free_port()}/0"
    not_ready = Release(REPO, {**env, "LABQUEUE_REDIS_URL": closed}, tmp_path, "not-ready")
    submitted: list[str] = []
    try:
        migrated = previous.manage("migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr
        seeded = previous.manage("seed_demo", f"--dataset-root={settings.MEDIA_ROOT}")
        assert seeded.returncode == 0, seeded.stderr

        # 1. The previous release serves.
        previous.start_web()
        previous.start_worker_and_beat()
        student = sign_in(previous.base, "student1", "labqueue-demo")
        submitted += [submit(student, previous.base) for _ in range(3)]

        # 2. A rollout that is not ready, rolled back.
        previous.stop_worker_and_beat()
        migrated = current.manage("migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stderr
        submitted.append(submit(student, previous.base))  # the previous release serves the migrated database
        not_ready.start_web()
        not_ready.start_worker_and_beat()
        ready = requests.get(not_ready.base + "/readyz", timeout=30)
        assert ready.status_code == 503 and not ready.json()["checks"]["broker"]["ok"], ready.text
        doctor = not_ready.manage("doctor")
        assert doctor.returncode == 1 and re.search(r"^FAIL +broker", doctor.stdout, re.M), doctor.stdout
        not_ready.stop_worker_and_beat()
        not_ready.stop_web()
        previous.start_worker_and_beat()  # rolled back: the previous code on the migrated database
        submitted.append(submit(student, previous.base))

        # 3. The routine update.
        previous.stop_worker_and_beat()
        migrated = current.manage("migrate", "--noinput")
        assert migrated.returncode == 0 and "No migrations to apply" in migrated.stdout, migrated.stdout
        current.start_worker_and_beat()
        current.start_web()
        submitted.append(submit(student, previous.base))  # the old web server still answers during the update
        previous.stop_web()
        student = sign_in(current.base, "student1", "labqueue-demo")
        submitted.append(submit(student, current.base))

        deadline = time.monotonic() + 300
        while any(status != "completed" for status, _ in jobs(database).values()):
            assert time.monotonic() < deadline, f"jobs: {jobs(database)}"
            time.sleep(2)  # a poll interval, not a wait: each look reads the database of the release under test
        ready = requests.get(current.base + "/readyz", timeout=30)
        assert ready.json()["checks"]["broker"]["ok"] and ready.json()["checks"]["database"]["ok"], ready.text
    finally:
        for release in (previous, current, not_ready):
            release.stop_worker_and_beat()
            release.stop_web()

    recorded = jobs(database)
    assert sorted(recorded) == sorted(submitted), "every submission is a job"
    for job_uuid, (_, slurm_id) in recorded.items():
        assert slurm_job_ids(f"lq-{uuid.UUID(job_uuid)}") == {slurm_id}, f"job {job_uuid}: one Slurm job"
    for release in (previous, current, not_ready):
        assert release.server_errors() == [], release.log("web").read_text()[-3000:]
