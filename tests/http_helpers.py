"""Small helpers for tests that read pages and the Celery queue the way a person or the worker would."""

import base64
import json
from html.parser import HTMLParser

import redis
from django.conf import settings

#: The Redis list kombu keeps the default Celery queue in.
CELERY_QUEUE_KEY = "celery"


class _Tables(HTMLParser):
    """The text of each <td> of every <table id=...>, row by row (header rows of <th> are left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.current: list[list[str]] | None = None
        self.row: list[str] | None = None
        self.cell: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "id" in attrs:
            self.current = self.tables.setdefault(attrs["id"], [])
        elif tag == "tr" and self.current is not None:
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append(" ".join(self.cell.split()))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.row:
                self.current.append(self.row)
            self.row = None
        elif tag == "table":
            self.current = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def table_rows(html: str, table_id: str) -> list[list[str]]:
    """The data rows of the table with this id ([] when the page has no such table)."""
    parser = _Tables()
    parser.feed(html)
    return parser.tables.get(table_id, [])


def page_messages(response) -> list[str]:
    """The messages (django.contrib.messages) a page showed."""
    return [str(message) for message in response.context["messages"]]


def celery_queue() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def celery_queue_clear() -> None:
    celery_queue().delete(CELERY_QUEUE_KEY)


def queued_tasks() -> list[tuple[str, list, dict]]:
    """(task name, args, kwargs) of every message waiting in the default Celery queue in Redis."""
    tasks = []
    for raw in celery_queue().lrange(CELERY_QUEUE_KEY, 0, -1):
        message = json.loads(raw)
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args, kwargs, _embed = json.loads(body)
        tasks.append((message["headers"]["task"], args, kwargs))
    return tasks
