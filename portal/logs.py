"""Log lines the same for web, worker and beat: what request or which job a record belongs to.

The request id comes from RequestIdMiddleware (the proxy's X-Request-ID when it is a safe token, else a
new one; sent back in the response), the job from `job_logging` around worker code that handles one job.
ContextFilter puts both on every record; JsonLinesFormatter writes one JSON object per line (time in UTC,
ISO 8601), TextFormatter the same fields for a terminal. settings.LOGGING wires them (LABQUEUE_LOG_FORMAT).

Every ERROR is a real fault: RefusalFilter keeps a 403 or 404 to one line (django.request), and
BrokerOutageFilter turns what Celery and kombu log while the broker is down (tracebacks, a retry line every few
seconds) into one WARNING when it goes and one INFO when it is back.
"""

from __future__ import annotations

import logging
import re
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse
from kombu.exceptions import OperationalError as KombuOperationalError
from pythonjsonlogger.json import JsonFormatter
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

REQUEST_ID_HEADER = "X-Request-ID"
#: An incoming id is kept only when it is a short token: it goes into every log line and back to the client.
SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,128}")

request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
job: ContextVar[str | None] = ContextVar("job", default=None)

CONTEXT_FIELDS = ("request_id", "job")


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        incoming = request.headers.get(REQUEST_ID_HEADER, "")
        request.request_id = incoming if SAFE_REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        # Not reset on the way out: Django logs an error response after the middleware has returned it.
        # request_finished clears it once the response is closed.
        request_id.set(request.request_id)
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request.request_id
        return response


def _request_finished(**kwargs) -> None:
    request_id.set(None)


request_finished.connect(_request_finished, dispatch_uid="portal.logs.request_finished")


@contextmanager
def job_logging(job_uuid) -> Iterator[None]:
    """Worker code handling one job: every record logged inside carries the job's uuid."""
    token = job.set(str(job_uuid))
    try:
        yield
    finally:
        job.reset(token)


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = getattr(record, "request_id", None) or request_id.get()
        record.job = getattr(record, "job", None) or job.get()
        return True


def utc_time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonLinesFormatter(JsonFormatter):
    """{"time", "level", "logger", "message"}, then request_id and job when known, then any extra fields."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            json_ensure_ascii=False,
        )

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (logging's name)
        return utc_time(record)

    def process_log_record(self, log_record: dict) -> dict:
        for field in CONTEXT_FIELDS:
            if log_record.get(field) is None:
                log_record.pop(field, None)
        return log_record


class TextFormatter(logging.Formatter):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (logging's name)
        return utc_time(record)

    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(f"{field}={value}" for field in CONTEXT_FIELDS if (value := getattr(record, field, None)))
        text = super().format(record)
        if not context:
            return text
        first, newline, rest = text.partition("\n")
        return f"{first} [{context}]{newline}{rest}"


class RefusalFilter(logging.Filter):
    """django.request: a 4xx answer (a refused permission, a page that is not there) is the portal working as
    designed, so its record is one line without the exception's traceback. A 5xx keeps its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True


#: Errors that mean "the broker (Redis) did not answer", wherever in an exception's chain they appear.
BROKER_ERRORS = (KombuOperationalError, RedisConnectionError, RedisTimeoutError, ConnectionError)
#: The loggers where Celery and kombu report the broker's connection: a task's own errors are not among them.
BROKER_LOGGERS = ("celery.beat", "celery.bootsteps", "celery.worker.consumer", "celery.worker.pidbox", "kombu")
#: Celery's reconnect loop and its one-time warning on a lost connection, logged without an exception.
BROKER_RETRY_MESSAGES = ("consumer: Cannot connect to", "consumer: Connection to broker lost")
BROKER_LOSS_WARNING = "worker_cancel_long_running_tasks_on_connection_loss"


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _raised_in_broker_client(error: BaseException) -> bool:
    """kombu or redis-py failing inside its own code once the connection is gone: a channel pool left empty
    ("pop from empty list"), a channel closed without its connection (an AttributeError on None)."""
    frames = traceback.extract_tb(error.__traceback__)
    inside = bool(frames) and any(package in frames[-1].filename for package in ("/kombu/", "/redis/"))
    return inside and isinstance(error, IndexError | AttributeError)


def broker_lost(record: logging.LogRecord) -> bool:
    """The record reports that the broker went away (and nothing else)."""
    if record.name == "py.warnings":
        return BROKER_LOSS_WARNING in record.getMessage()
    if not record.name.startswith(BROKER_LOGGERS):
        return False
    if record.getMessage().startswith(BROKER_RETRY_MESSAGES):
        return True
    if record.name == "celery.bootsteps" and record.levelno >= logging.WARNING and broker_outage.since is not None:
        return True  # "Error on restarting Gossip: ...": the worker's steps cannot stop cleanly without a broker
    error = record.exc_info[1] if record.exc_info else None
    return any(isinstance(link, BROKER_ERRORS) or _raised_in_broker_client(link) for link in _chain(error))


def _summary(record: logging.LogRecord) -> str:
    error = record.exc_info[1] if record.exc_info else None
    causes = [link for link in _chain(error) if isinstance(link, BROKER_ERRORS)]
    if causes:
        return str(causes[-1]).strip().rstrip(".")
    if record.name == "py.warnings" or "Connection to broker lost" in record.getMessage():
        return "the connection was lost"
    return record.getMessage().splitlines()[0].strip().rstrip(".")


class BrokerOutage:
    """Whether this process has lost the broker, so that an outage is told once when it starts and once when
    it ends, whatever Celery logs in between (a retry every few seconds, beat's failed sends)."""

    def __init__(self) -> None:
        self.since: float | None = None

    def begin(self) -> bool:
        """The broker is gone: True only for the first report of this outage."""
        if self.since is not None:
            return False
        self.since = time.monotonic()
        return True

    def end(self) -> float | None:
        """The broker answers: how long it was gone, or None when it was not."""
        since, self.since = self.since, None
        return None if since is None else time.monotonic() - since


broker_outage = BrokerOutage()
broker_log = logging.getLogger("portal.broker")


class BrokerOutageFilter(logging.Filter):
    """Worker and beat (a handler filter, so it sees every logger): the tracebacks and retry lines Celery and
    kombu write while the broker is down become one WARNING when it goes, and its return one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if broker_lost(record):
            if not broker_outage.begin():
                return False
            _rewrite(record, logging.WARNING, f"The broker (Redis) does not answer: {_summary(record)}. Retrying.")
        elif record.name == "celery.worker.consumer.connection" and (seconds := broker_outage.end()) is not None:
            _rewrite(
                record, logging.INFO, f"The broker (Redis) answers again after {seconds:.0f} s: {record.getMessage()}"
            )
        return True


def broker_reached() -> None:
    """Something was sent through the broker (beat's schedule, a task enqueued): an outage, if any, is over."""
    seconds = broker_outage.end()
    if seconds is not None:
        broker_log.info("The broker (Redis) answers again after %.0f s.", seconds)


def _rewrite(record: logging.LogRecord, level: int, message: str) -> None:
    record.levelno, record.levelname = level, logging.getLevelName(level)
    record.msg, record.args = message, ()
    record.exc_info = record.exc_text = record.stack_info = None
