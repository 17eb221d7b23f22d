"""Logs are JSON lines with the request id or the job they belong to, in the web server and the worker alike."""

import io
import json
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobs.dispatch import job_dispatch, job_scancel
from jobs.models import Status
from portal.celery import app
from slurm import SlurmUnavailable
from tests.conftest import job_row
from tests.service_account import service_argv, service_env, service_media, stop  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def log_lines():
    """What the portal's configured console handler (settings.LOGGING) writes, as parsed JSON lines."""
    handler = next(handler for handler in logging.getLogger().handlers if handler.get_name() == "console")
    buffer = io.StringIO()
    # Swapped by hand: setStream() flushes the stream it replaces, which a runner capturing output (mutmut)
    # may already have closed.
    previous, handler.stream = handler.stream, buffer
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines()]
    handler.stream = previous


def test_a_request_logs_json_lines_carrying_the_request_id_it_sends_back(client, db, log_lines):
    response = client.get("/no-such-page/")

    request_id = response.headers["X-Request-ID"]
    assert len(request_id) == 32
    [line] = [line for line in log_lines() if line["logger"] == "django.request"]
    assert line["request_id"] == request_id
    assert line["level"] == "WARNING"
    assert line["message"] == "Not Found: /no-such-page/"
    assert line["time"].endswith("Z") and line["time"][10] == "T"


def test_a_safe_request_id_from_the_proxy_is_kept_and_an_unsafe_one_replaced(client, db, log_lines):
    kept = client.get("/no-such-page/", headers={"X-Request-ID": "proxy-7f3a9c21-e5"})
    replaced = client.get("/no-such-page/", headers={"X-Request-ID": 'x"}, {"level": "forged'})

    assert kept.headers["X-Request-ID"] == "proxy-7f3a9c21-e5"
    assert replaced.headers["X-Request-ID"] != 'x"}, {"level": "forged'
    ids = [line["request_id"] for line in log_lines() if line["logger"] == "django.request"]
    assert ids == ["proxy-7f3a9c21-e5", replaced.headers["X-Request-ID"]]


def test_a_log_line_outside_any_request_carries_no_request_id(client, db, log_lines):
    client.get("/no-such-page/")

    logging.getLogger("portal.test").warning("after the request")

    assert "request_id" not in log_lines()[-1]


def test_the_workers_log_lines_while_it_handles_a_job_carry_the_jobs_uuid(student, course, assignment, log_lines):
    job = job_row(student, assignment)
    course.enrollments.filter(user=student).delete()  # dropped since: the worker refuses to send it

    job_dispatch(job_id=job.pk)

    [line] = [line for line in log_lines() if line["logger"] == "jobs.dispatch"]
    assert line["job"] == str(job.uuid)
    assert "no longer enrolled" in line["message"]
    logging.getLogger("jobs.dispatch").info("after the job")
    assert "job" not in log_lines()[-1]


def test_the_workers_log_lines_while_it_cancels_a_job_carry_the_jobs_uuid(settings, student, assignment, log_lines):
    settings.SLURM_BIN_DIR = str(REPO / "no-such-folder")  # scancel cannot run: the worker logs why
    job = job_row(student, assignment, status=Status.RUNNING, slurm_job_id="4242")

    with pytest.raises(SlurmUnavailable):
        job_scancel(job_id=job.pk)

    [line] = [line for line in log_lines() if line["logger"] == "slurm.runner"]
    assert line["job"] == str(job.uuid)
    assert line["level"] == "WARNING" and "scancel 4242 failed" in line["message"]


def _output_once_ready(argv: list[str], env: dict[str, str], log: Path, *, ready: str) -> str:
    """A Celery process's output from its start until it says `ready` (then it is stopped: what runuser and
    Celery print on the way out is not logging)."""
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            service_argv(*argv), env=env, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 60
        while ready not in (output := log.read_text(errors="replace")):
            assert process.poll() is None, output
            assert time.monotonic() < deadline, output
            time.sleep(0.2)
        time.sleep(0.5)  # a line still being written when `ready` arrived
        return log.read_text(errors="replace")
    finally:
        stop(process)


def test_a_real_celery_worker_and_beat_log_json_lines(settings, service_media, tmp_path):  # noqa: F811
    env = service_env(settings, LABQUEUE_LOG_FORMAT="json")
    celery = str(Path(sys.executable).parent / "celery")

    try:
        worker = _output_once_ready(
            [
                celery,
                "-A",
                "portal",
                "--quiet",
                "worker",
                "--pool=solo",
                "--queues=labqueue-log-test",
                "--hostname=logtest@%h",
                "--loglevel=INFO",
            ],
            env,
            tmp_path / "worker.log",
            ready="ready.",
        )
        beat = _output_once_ready(
            [celery, "-A", "portal", "--quiet", "beat", "--loglevel=INFO", f"--schedule={service_media}/schedule"],
            env,
            tmp_path / "beat.log",
            ready="beat: Starting",
        )
    finally:
        app.control.purge()  # anything beat sent in its few seconds

    for output in (worker, beat):
        lines = [json.loads(line) for line in output.splitlines() if line.strip()]
        assert lines
        for line in lines:
            assert {"time", "level", "logger", "message"} <= set(line)
    assert any(
        line["logger"] == "celery.apps.worker" and line["message"].endswith("ready.")
        for line in map(json.loads, worker.splitlines())
    )


def test_the_text_format_has_the_same_fields_for_a_terminal():
    program = (
        "import django, logging; django.setup()\n"
        "from portal.logs import job_logging\n"
        "with job_logging('6f1c2d3e-0000-4000-8000-000000000001'):\n"
        "    logging.getLogger('jobs.dispatch').warning('Job not sent: no account')\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "LABQUEUE_SECRET_KEY": "a-test-only-secret-key",
        "LABQUEUE_LOG_FORMAT": "text",
    }

    run = subprocess.run([sys.executable, "-c", program], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)

    assert run.returncode == 0, run.stderr
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING jobs\.dispatch Job not sent: no account "
        r"\[job=6f1c2d3e-0000-4000-8000-000000000001\]\n",
        run.stderr,
    ), run.stderr
