"""Small helpers for tests that read pages and the Celery queue the way a person or the worker would."""

import base64
import json
from html.parser import HTMLParser

import redis
import requests
from django.conf import settings

#: The Redis lists kombu keeps the Celery queues in (portal/settings.py, CELERY_TASK_QUEUES).
CELERY_QUEUE_KEYS = tuple(settings.CELERY_TASK_QUEUES)


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


class _Forms(HTMLParser):
    """Every <form>: its action, the names in it (buttons too), and the values a browser would send as it
    stands (inputs with a value, checked boxes, textareas, selected options)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict] = []
        self.form: dict | None = None
        self.textarea: str | None = None
        self.select: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.form = {"action": attrs.get("action") or "", "names": set(), "fields": {}}
            self.forms.append(self.form)
            return
        if self.form is None or "name" not in attrs and tag != "option":
            return
        name = attrs.get("name")
        if name:
            self.form["names"].add(name)
        if tag == "input" and attrs.get("type") not in ("submit", "button", "file"):
            if attrs.get("type") not in ("checkbox", "radio") or "checked" in attrs:
                self.form["fields"][name] = attrs.get("value") or ""
        elif tag == "textarea":
            self.textarea = name
            self.form["fields"][name] = ""
        elif tag == "select":
            self.select = name
        elif tag == "option" and self.select and ("selected" in attrs or self.select not in self.form["fields"]):
            self.form["fields"][self.select] = attrs.get("value", "")

    def handle_endtag(self, tag):
        if tag == "form":
            self.form = None
        elif tag == "textarea":
            self.textarea = None
        elif tag == "select":
            self.select = None

    def handle_data(self, data):
        if self.form is not None and self.textarea:
            self.form["fields"][self.textarea] += data


def form_fields(html: str, *, action: str = "", containing: str = "") -> dict[str, str]:
    """What the page's form (the one posting to `action`, or holding a field or button named `containing`)
    sends when submitted unchanged."""
    parser = _Forms()
    parser.feed(html)
    for form in parser.forms:
        if (action and form["action"] == action) or (containing and containing in form["names"]):
            return dict(form["fields"])
    raise AssertionError(f"no form for {action or containing!r} on the page")


def page_messages(response) -> list[str]:
    """The messages (django.contrib.messages) a page showed."""
    return [str(message) for message in response.context["messages"]]


def celery_queue() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def celery_queue_clear() -> None:
    celery_queue().delete(*CELERY_QUEUE_KEYS)


def queued_tasks() -> list[tuple[str, list, dict]]:
    """(task name, args, kwargs) of every message waiting in the Celery queues in Redis."""
    tasks = []
    raws = [raw for key in CELERY_QUEUE_KEYS for raw in celery_queue().lrange(key, 0, -1)]
    for raw in raws:
        message = json.loads(raw)
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args, kwargs, _embed = json.loads(body)
        tasks.append((message["headers"]["task"], args, kwargs))
    return tasks


def sign_in(base: str, username: str, password: str) -> requests.Session:
    """A browser signed in through the login form with a local password (the demo's, or LABQUEUE_LOCAL_PASSWORDS)."""
    browser = requests.Session()
    page = browser.get(base + "/accounts/login/", timeout=60)
    fields = {**form_fields(page.text, containing="password"), "login": username, "password": password}
    answer = browser.post(page.url, data=fields, headers={"Referer": page.url}, timeout=60, allow_redirects=False)
    assert answer.status_code == 302, answer.text[-2000:]
    return browser
