"""Redis, the broker, stops and comes back under a real Celery worker and beat: each logs one WARNING when the
outage starts and one INFO when it ends, no traceback and no ERROR. The broker is a redis-server of this
test's own (tests/faults/conftest.py's Broker, stopped and started again on its port); the worker consumes a
queue nothing is sent to, so no task runs and the lab cluster is not touched."""

import json
import os
import sys
from pathlib import Path

from tests.faults.conftest import Broker, wait_until
from tests.service_account import REPO, _start, stop

CELERY = str(Path(sys.executable).parent / "celery")


def _lines(log: Path) -> list[dict]:
    """The log's JSON lines (Celery's start-up banner is not logging)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _has(log: Path, level: str, text: str) -> bool:
    return any(line["level"] == level and text in line["message"] for line in _lines(log))


def _sends(log: Path) -> int:
    return sum("Sending due task" in line["message"] for line in _lines(log))


def test_a_broker_outage_is_one_warning_and_one_info_in_the_worker_and_beat_logs(tmp_path):
    broker = Broker()
    broker.start()
    env = {**os.environ, "LABQUEUE_REDIS_URL": broker.url, "LABQUEUE_LOG_FORMAT": "json", "LABQUEUE_SYNC_SECONDS": "1"}
    worker_log, beat_log = tmp_path / "worker.log", tmp_path / "beat.log"
    worker_argv = [CELERY, "-A", "portal", "worker", "--concurrency=1", "--queues=labqueue-outage-test"]
    beat_argv = [CELERY, "-A", "portal", "beat", f"--schedule={tmp_path / 'schedule'}"]
    worker = _start([*worker_argv, "--hostname=outage@%h", "--loglevel=INFO"], env, worker_log, cwd=REPO)
    beat = _start([*beat_argv, "--loglevel=INFO"], env, beat_log, cwd=REPO)
    try:
        wait_until(lambda: _has(worker_log, "INFO", "ready.") and _sends(beat_log) >= 2, "worker and beat started")

        broker.stop()
        wait_until(lambda: _has(beat_log, "WARNING", "does not answer"), "beat noticed the outage", seconds=60)
        wait_until(lambda: _has(worker_log, "WARNING", "does not answer"), "the worker noticed", seconds=60)
        sent_while_down = _sends(beat_log)
        wait_until(lambda: _sends(beat_log) >= sent_while_down + 3, "beat tried to send three more times")
        broker.start()
        wait_until(lambda: _has(beat_log, "INFO", "answers again"), "beat noticed the return", seconds=60)
        wait_until(lambda: _has(worker_log, "INFO", "answers again"), "the worker noticed the return", seconds=90)
    finally:
        stop(worker)
        stop(beat)
        broker.stop()

    for log in (worker_log, beat_log):
        lines = _lines(log)
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text(errors="replace")
        assert [line["message"] for line in lines if line["level"] == "ERROR"] == []
        assert [line["message"] for line in lines if line["level"] == "WARNING"] == [
            next(line["message"] for line in lines if "does not answer" in line["message"])
        ]
        assert sum("answers again" in line["message"] for line in lines if line["level"] == "INFO") == 1
