"""Log lines the same for web, worker and beat: what request or which job a record belongs to.

The request id comes from RequestIdMiddleware (the proxy's X-Request-ID when it is a safe token, else a
new one; sent back in the response), the job from `job_logging` around worker code that handles one job.
ContextFilter puts both on every record; JsonLinesFormatter writes one JSON object per line (time in UTC,
ISO 8601), TextFormatter the same fields for a terminal. settings.LOGGING wires them (LABQUEUE_LOG_FORMAT).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse
from pythonjsonlogger.json import JsonFormatter

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
