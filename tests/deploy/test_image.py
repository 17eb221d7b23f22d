"""The image, built from the Dockerfile on this machine (scripts/image: a Docker daemon, and a base image made
with debootstrap since no image registry can be reached here), run as a site would run it: the host's
network, munge socket, Slurm configuration, accounts and job root mounted. `doctor` passes in it against the
lab cluster, the web server serves its hashed static files, and nothing but the portal is inside."""

import subprocess
import time
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings
from django.db import connection

from jobs.tasks import jobs_sync
from tests.behaviour_helpers import tasks_run_in_process
from tests.service_account import REPO, free_port

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]

TAG = "labqueue:test"
SITE_MOUNTS = [
    "/run/munge:/run/munge",
    "/etc/slurm:/etc/slurm:ro",
    f"{Path('/etc/slurm/slurm.conf').resolve().parent}:{Path('/etc/slurm/slurm.conf').resolve().parent}:ro",
    "/etc/passwd:/etc/passwd:ro",
    "/etc/group:/etc/group:ro",
]


@pytest.fixture(scope="module")
def image() -> str:
    built = subprocess.run([REPO / "scripts" / "image", "build", TAG], capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stdout + built.stderr
    return TAG


def docker_run(*argv: str, env: dict[str, str], mounts: list[str] = (), detach: bool = False, entrypoint: str = ""):
    command = ["docker", "run", "--network", "host", "--detach" if detach else "--rm"]
    command += [f"--volume={mount}" for mount in mounts]
    command += [f"--env={name}={value}" for name, value in env.items()]
    command += [f"--entrypoint={entrypoint}"] if entrypoint else []
    return subprocess.run([*command, TAG, *argv], capture_output=True, text=True, timeout=300)


def site_env(settings) -> dict[str, str]:
    db = connection.settings_dict
    return {
        "DATABASE_URL": f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "LABQUEUE_REDIS_URL": django_settings.CELERY_BROKER_URL,
        "LABQUEUE_SECRET_KEY": "a-test-secret-key-for-the-image-that-is-long-enough-0123456789",
        "LABQUEUE_JOB_ROOT": str(settings.LABQUEUE_JOB_ROOT),
        "LABQUEUE_LOG_FORMAT": "text",
    }


def test_doctor_passes_in_the_image_against_the_lab_cluster(image, settings):
    with tasks_run_in_process():
        jobs_sync()  # what the worker's periodic sync records, as if beat and the worker ran
    mounts = [*SITE_MOUNTS, f"{settings.LABQUEUE_JOB_ROOT}:{settings.LABQUEUE_JOB_ROOT}"]

    doctor = docker_run("doctor", "--user", "student1", env=site_env(settings), mounts=mounts)

    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    for check in ("account", "database", "broker", "slurm versions", "munge", "run-as", "job files", "static files"):
        assert f"OK    {check}:" in doctor.stdout, doctor.stdout
    assert "runs as labqueue" in doctor.stdout


def test_the_image_serves_hashed_static_files_and_holds_only_the_portal(image, settings):
    port = free_port()
    env = {**site_env(settings), "LABQUEUE_WEB_BIND": f"127.0.0.1:{port}", "LABQUEUE_WEB_WORKERS": "1"}
    started = docker_run("web", env=env, detach=True)
    assert started.returncode == 0, started.stderr
    container = started.stdout.strip()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                page = requests.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=10)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, subprocess.run(["docker", "logs", container], capture_output=True)
                time.sleep(0.5)
        assert page.status_code == 200
        [stylesheet] = [part.split('"')[0] for part in page.text.split('href="/static/')[1:] if ".css" in part]
        assert stylesheet.count(".") == 2, f"a content-hashed name: {stylesheet}"
        styles = requests.get(f"http://127.0.0.1:{port}/static/{stylesheet}", timeout=10)
        assert styles.status_code == 200 and "immutable" in styles.headers["Cache-Control"]
    finally:
        subprocess.run(["docker", "rm", "--force", container], capture_output=True)

    inside = docker_run(
        "-c",
        "id -un; ls -A /app | tr '\\n' ' '; echo; ls -A /app/scripts | tr '\\n' ' '; echo;"
        " python -c 'import pytest' 2>&1 | tail -1",
        env={},
        entrypoint="sh",
    )
    user, listing, scripts, no_pytest = inside.stdout.strip().split("\n", 3)
    assert user == "labqueue"
    assert not {".git", ".venv", "var", "tests", "mutants", ".env", "docs", "Makefile"} & set(listing.split()), listing
    helper = {"labqueue-jobdir", "labqueue_jobdir.py", "__pycache__"}  # the helper's launcher and code, compiled
    assert set(scripts.split()) == helper, f"no lab, benchmark or demo script in the image: {scripts}"
    assert "No module named 'pytest'" in no_pytest, "development tools stay out of the image"
    check = subprocess.run(
        ["docker", "inspect", "--format", "{{json .Config.Healthcheck.Test}}", TAG], capture_output=True
    )
    assert check.stdout.strip() == b'["CMD","/app/deploy/entrypoint","probe","/healthz"]', check.stdout
