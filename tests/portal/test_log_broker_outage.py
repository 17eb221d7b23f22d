"""Redis, the broker, stops and comes back under a real Celery worker and beat: each logs one WARNING when the
outage starts and one INFO when it ends, no traceback and no ERROR. The broker is a redis-server of this
test's own (tests/faults/conftest.py's Broker, stopped and started again on its port); the worker consumes a
queue nothing is sent to, so no task runs and the lab cluster is not touched. A worker step failing to restart
for want of the broker ("Error on restarting Gossip") is shown through Celery's own bootsteps code in this
process: the outage that makes it happen in a real worker is a matter of timing."""

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from celery.bootsteps import Blueprint
from kombu import Connection

from portal.logs import broker_outage, broker_reached
from tests.faults.conftest import Broker, wait_until
from tests.portal.test_logs import log_lines  # noqa: F401 (a fixture)
from tests.service_account import REPO, _start, free_port, stop

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


class _Step:
    """A worker step (as Gossip is) whose stop fails the way `failure` says."""

    alias = "Gossip"

    def __init__(self, failure) -> None:
        self.failure = failure

    def stop(self, parent) -> None:
        self.failure()


def _broker_unreachable() -> None:
    """What a step stopping without a broker runs into: kombu cannot reach Redis (a port nobody listens on)."""
    with Connection(f"redis://127.0.0.1:{free_port()}/0") as connection:
        connection.ensure_connection(max_retries=1, interval_start=0)


def _a_bug() -> None:
    raise RuntimeError("a fault in the step itself")


@pytest.fixture
def outage_state():
    yield broker_outage
    broker_outage.end()


def test_gossip_failing_to_restart_without_the_broker_is_one_warning_but_a_real_fault_stays_an_error(
    log_lines,  # noqa: F811
    outage_state,
):
    consumer = SimpleNamespace(steps=[_Step(_broker_unreachable)])
    blueprint = Blueprint(name="Consumer")

    blueprint.restart(consumer)  # Celery's own path: bootsteps logs "Error on restarting Gossip: ..."
    blueprint.restart(consumer)
    consumer.steps = [_Step(_a_bug)]
    blueprint.restart(consumer)  # during the outage: part of it
    broker_reached()
    blueprint.restart(consumer)  # with the broker back: a fault of its own

    lines = [(line["level"], line["message"], "exc_info" in line) for line in log_lines()]
    assert lines[0][0] == "WARNING" and lines[0][1].startswith("The broker (Redis) does not answer: ")
    assert "Connection refused" in lines[0][1] and not lines[0][2]
    assert lines[1][0] == "INFO" and lines[1][1].startswith("The broker (Redis) answers again after ")
    assert lines[2][:2] == ("ERROR", "Error on restarting Gossip: RuntimeError('a fault in the step itself')")
    assert lines[2][2]
    assert len(lines) == 3
