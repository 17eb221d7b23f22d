"""A fresh install, started as the systemd units start it (tests/deploy/units.py: their own ExecStart lines, as
the service account), on an empty database: the migrate unit, the web server, one worker per queue and beat.
/readyz (and HEAD /readyz, as many monitors ask) answers 200 within a minute, while the usage ingest and the
association reconciliation, minutes from their first run, say "not yet"; no process logs an ERROR, and every
line of the web server's log is JSON, the access lines with their request id. /metrics counts the requests."""

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from ops.metrics import REQUESTS_KEY
from portal.broker import broker_redis
from tests.deploy.units import REPO, environment, exec_start
from tests.http_helpers import celery_queue_clear
from tests.service_account import _start, free_port, service_argv, service_env, stop

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

QUEUES = ("submit", "sync", "maintenance")
TOKEN = "scraper-token-for-the-fresh-install"


@pytest.fixture
def fresh_install(settings, service_media, empty_database, tmp_path) -> Iterator[tuple[str, Path]]:
    """The units started on an empty database, in the order systemd starts them; yields the web address."""
    celery_queue_clear()
    broker_redis().delete(REQUESTS_KEY)  # counted from this install's start, as on a new Redis
    port = free_port()
    env = service_env(
        settings,
        DATABASE_URL=empty_database,
        LABQUEUE_DEBUG="0",
        LABQUEUE_WEB_BIND=f"127.0.0.1:{port}",
        LABQUEUE_WEB_WORKERS="2",
        LABQUEUE_STATIC_ROOT=str(service_media / "static"),
        LABQUEUE_BEAT_SCHEDULE=str(service_media / "celerybeat-schedule"),
        LABQUEUE_METRICS_TOKEN=TOKEN,
        LABQUEUE_LOG_FORMAT="json",
    )
    migrate = exec_start("labqueue-migrate.service")
    migrated = _run(service_argv(*migrate), env)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    web_env = {**environment("labqueue-web.service"), **env}
    collected = _run(service_argv(*exec_start("labqueue-web.service", "ExecStartPre")), web_env)
    assert collected.returncode == 0, collected.stderr

    processes = [_start(service_argv(*exec_start("labqueue-web.service")), web_env, tmp_path / "web.log")]
    for queue in QUEUES:
        argv = exec_start("labqueue-worker@.service", instance=queue)
        worker_env = {**environment("labqueue-worker@.service"), **env}
        processes.append(_start(service_argv(*argv), worker_env, tmp_path / f"worker-{queue}.log"))
    beat_env = {**environment("labqueue-beat.service"), **env}
    processes.append(_start(service_argv(*exec_start("labqueue-beat.service")), beat_env, tmp_path / "beat.log"))
    try:
        yield f"http://127.0.0.1:{port}", tmp_path
    finally:
        for process in processes:
            stop(process)
        for log in sorted(tmp_path.glob("*.log")):
            print(f"--- {log.name}\n" + log.read_text(errors="replace")[-3000:])


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_a_fresh_install_is_ready_within_a_minute_with_no_error_logged(fresh_install):
    base, logs = fresh_install
    started = time.monotonic()
    while True:
        try:
            answer = requests.get(f"{base}/readyz", timeout=10)
            if answer.status_code == 200:
                break
            assert answer.status_code == 503, answer.text[:2000]
        except requests.ConnectionError:
            pass
        assert time.monotonic() - started < 60, f"/readyz not 200 a minute after the start: {answer.text}"
        time.sleep(1)  # a poll interval: each /readyz asks the database, the broker and the heartbeats anew

    checks = answer.json()["checks"]
    assert checks["usage_ingest"] == {"ok": True, "not_yet": True}, checks
    assert checks["association_reconcile"] == {"ok": True, "not_yet": True}, checks
    head = requests.head(f"{base}/readyz", timeout=10)
    assert head.status_code == 200 and head.content == b""
    scraped = requests.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    counted = [line for line in scraped.text.splitlines() if line.startswith("labqueue_http_requests_total")]
    assert 'labqueue_http_requests_total{method="HEAD",status="200",view="readyz"} 1.0' in counted, counted

    for log in logs.glob("*.log"):
        lines = [json.loads(text) for text in log.read_text().splitlines() if text.startswith("{")]
        assert not [line for line in lines if line["level"] in ("ERROR", "CRITICAL")], (log.name, lines)
    web = (logs / "web.log").read_text().splitlines()
    assert [text for text in web if not text.startswith("{")] == [], "every line of the web server's log is JSON"
    access = [json.loads(text) for text in web if '"gunicorn.access"' in text]
    assert access and all(len(line["request_id"]) == 32 for line in access), access[:3]
