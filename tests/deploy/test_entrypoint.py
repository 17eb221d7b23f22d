"""deploy/entrypoint, the image's entrypoint, run outside the image (no Docker daemon runs here): each
sub-command starts what it names with this checkout's virtualenv first on PATH, as the image's Python is.

`migrate` migrates an empty PostgreSQL database of its own; `web` serves /healthz over HTTP with the
worker count from the environment; `probe` says whether the web server answers; `worker` answers a ping
through the broker; `beat` sends the periodic tasks; anything unknown is refused with a clear message.
"""

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.db import connection

from tests.deploy.units import REPO
from tests.service_account import free_port, stop

ENTRYPOINT = str(REPO / "deploy" / "entrypoint")


def entrypoint_env(**extra: str) -> dict[str, str]:
    db = connection.settings_dict
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LABQUEUE_SECRET_KEY": settings.SECRET_KEY,
        "DATABASE_URL": f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "LABQUEUE_REDIS_URL": settings.CELERY_BROKER_URL,
        "LABQUEUE_ALLOWED_HOSTS": "127.0.0.1",
        **extra,
    }


def entrypoint(*argv: str, timeout: float = 180, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ENTRYPOINT, *argv], env=entrypoint_env(**env), capture_output=True, text=True, timeout=timeout, check=False
    )


@contextmanager
def started(*argv: str, log: Path, **env: str) -> Iterator[subprocess.Popen]:
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [ENTRYPOINT, *argv],
            env=entrypoint_env(**env),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        stop(process)


def wait_for(condition, what: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}:\n{log.read_text(errors='replace')[-4000:]}"
        time.sleep(0.3)


def test_migrate_migrates_an_empty_database_and_exits(empty_database):
    unmigrated = entrypoint("python", "manage.py", "migrate", "--check", DATABASE_URL=empty_database)
    assert unmigrated.returncode != 0, "an empty database has migrations to apply"

    migrated = entrypoint("migrate", DATABASE_URL=empty_database)

    assert migrated.returncode == 0, migrated.stderr
    assert "Applying jobs.0001_initial... OK" in migrated.stdout
    checked = entrypoint("python", "manage.py", "migrate", "--check", DATABASE_URL=empty_database)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_web_serves_healthz_with_gunicorn_configured_from_the_environment(django_db_setup, tmp_path):
    port = free_port()
    web_env = {"LABQUEUE_WEB_BIND": f"127.0.0.1:{port}", "LABQUEUE_WEB_WORKERS": "2", "LABQUEUE_WEB_THREADS": "1"}
    log = tmp_path / "web.log"
    with started("web", log=log, **web_env) as web:

        def answers() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
            except requests.ConnectionError:
                assert web.poll() is None, log.read_text()
                return False

        wait_for(answers, "the web server never answered /healthz", log)
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).json() == {"status": "ok"}
        workers = subprocess.run(["ps", "--ppid", str(web.pid), "-o", "pid="], capture_output=True, text=True)
        assert len(workers.stdout.split()) == 2, "LABQUEUE_WEB_WORKERS=2: two gunicorn workers"
        assert entrypoint("probe", "/healthz", **web_env).returncode == 0

        sent = requests.get(f"http://127.0.0.1:{port}/healthz", headers={"X-Request-ID": "probe-0123456789"}, timeout=5)
        made = requests.head(f"http://127.0.0.1:{port}/healthz", timeout=5)
        assert sent.headers["X-Request-ID"] == "probe-0123456789" and made.status_code == 200
        ids = {"probe-0123456789", made.headers["X-Request-ID"]}
        wait_for(lambda: ids <= {line.get("request_id") for line in access_lines(log)}, "no access log lines", log)
        by_id = {line.get("request_id"): line for line in access_lines(log)}
        line = by_id["probe-0123456789"]
        assert line["level"] == "INFO" and line["method"] == "GET" and line["path"] == "/healthz"
        assert line["status"] == 200 and isinstance(line["duration_ms"], int)
        assert '"GET /healthz HTTP/1.1" 200' in line["message"]
        assert by_id[made.headers["X-Request-ID"]]["method"] == "HEAD", "a request without an id gets the portal's"

    gone = entrypoint("probe", "/healthz", **web_env)
    assert gone.returncode == 1 and "did not answer /healthz" in gone.stderr


def access_lines(log: Path) -> list[dict]:
    """gunicorn's access lines in the web server's log: every line of it must be a JSON object."""
    lines = []
    for text in log.read_text(errors="replace").splitlines():
        if text.startswith("{"):
            line = json.loads(text)
            if line["logger"] == "gunicorn.access":
                lines.append(line)
    return lines


def test_the_web_servers_own_lines_are_json_lines_like_the_portals(django_db_setup, tmp_path):
    port = free_port()
    log = tmp_path / "web.log"
    with started("web", log=log, LABQUEUE_WEB_BIND=f"127.0.0.1:{port}", LABQUEUE_WEB_WORKERS="1") as web:
        wait_for(lambda: web.poll() is None and "Booting worker" in log.read_text(), "gunicorn did not start", log)
    lines = [json.loads(text) for text in log.read_text().splitlines() if text.startswith("{")]

    assert {"Starting gunicorn", "Shutting down: Master"} <= {line["message"].split(" 2")[0] for line in lines}
    assert {line["logger"] for line in lines} >= {"gunicorn.error"}
    assert all(set(line) >= {"time", "level", "logger", "message"} for line in lines)


def test_web_refuses_a_setting_that_is_not_a_number_naming_it():
    result = entrypoint("web", LABQUEUE_WEB_BIND=f"127.0.0.1:{free_port()}", LABQUEUE_WEB_WORKERS="three", timeout=60)

    assert result.returncode != 0
    assert "LABQUEUE_WEB_WORKERS must be a whole number, not 'three'" in result.stdout + result.stderr


@pytest.mark.parametrize("command", ["serve", "--web"])
def test_an_unknown_sub_command_is_refused_with_the_ones_there_are(command):
    result = entrypoint(command, timeout=30)

    assert result.returncode == 64
    assert f"'{command}'" in result.stderr
    assert "web, worker, beat, migrate, doctor, probe" in result.stderr


def test_anything_else_runs_as_given():
    result = entrypoint("python", "-c", "import django; print(django.get_version())", timeout=30)

    assert result.returncode == 0 and result.stdout.startswith("5.2")


def test_worker_answers_a_ping_through_the_broker(django_db_setup, tmp_path):
    log = tmp_path / "worker.log"
    name = f"entrypoint-{uuid.uuid4().hex[:8]}@{os.uname().nodename}"
    with started("worker", "--concurrency=1", f"--hostname={name}", log=log) as worker:

        def pong() -> bool:
            assert worker.poll() is None, log.read_text()
            ping = entrypoint("celery", "-A", "portal", "inspect", "ping", "-d", name, "--timeout=2", timeout=60)
            return ping.returncode == 0 and "pong" in ping.stdout

        wait_for(pong, "the worker never answered a ping", log, timeout=90)


def test_a_worker_for_one_queue_consumes_that_queue_alone_and_is_named_after_it(django_db_setup, tmp_path):
    log = tmp_path / "worker.log"
    host = os.uname().nodename
    with started("worker", "maintenance", log=log) as worker:

        def queues() -> str:
            assert worker.poll() is None, log.read_text()
            asked = entrypoint(
                "celery", "-A", "portal", "inspect", "active_queues", "-d", f"maintenance@{host}", "--json", timeout=60
            )
            return asked.stdout if asked.returncode == 0 else ""

        wait_for(lambda: queues() != "", "the maintenance worker never answered", log, timeout=90)
        answer = json.loads(queues())
    assert [queue["name"] for queue in answer[f"maintenance@{host}"]] == ["celery"]


def test_a_worker_for_a_queue_there_is_not_is_refused_naming_the_queues():
    result = entrypoint("worker", "submits", timeout=30)

    assert result.returncode == 64
    assert "no queue named 'submits'. Use one of: submit, sync, maintenance." in result.stderr


def test_beat_sends_the_periodic_tasks(django_db_setup, tmp_path):
    log = tmp_path / "beat.log"
    schedule = str(tmp_path / "celerybeat-schedule")
    with started("beat", log=log, LABQUEUE_BEAT_SCHEDULE=schedule, LABQUEUE_SYNC_SECONDS="1") as beat:
        wait_for(
            lambda: beat.poll() is None and "Sending due task jobs-sync" in log.read_text(),
            "beat sent no job-status sync",
            log,
        )
    assert Path(schedule).exists() or Path(schedule + ".db").exists(), "beat keeps its schedule where it was told"


def test_doctor_runs_the_checks_and_fails_naming_the_fix(db):
    """Run as root here, doctor's first check fails (it must run as the service account) and says so; the
    database and broker checks still run and pass."""
    result = entrypoint("doctor", timeout=120)

    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^FAIL +account", result.stdout, re.M) and "service account" in result.stdout
    assert re.search(r"^OK +database", result.stdout, re.M), result.stdout
    assert re.search(r"^OK +broker", result.stdout, re.M), result.stdout
