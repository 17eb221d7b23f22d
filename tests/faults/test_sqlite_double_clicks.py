"""The development set-up on SQLite (WAL, busy timeout, IMMEDIATE transactions: portal/settings.py) takes
the same double clicks as PostgreSQL: a database of its own, migrated and seeded as a developer would
(`migrate`, `seed_demo`), served by gunicorn with the worker and beat writing beside it, people signing in
with the demo's passwords. Every form sent twice at once has one effect and no answer is an HTTP 500."""

import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.faults.conftest import wait_until
from tests.http_helpers import form_fields, sign_in
from tests.service_account import as_service_account, running_portal, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]

SUBMIT = "/courses/cs101-demo/assignments/gpu-hello/"  # the assignment page posts to itself


@pytest.fixture
def sqlite_env(settings) -> dict[str, str]:
    database = settings.MEDIA_ROOT / "db.sqlite3"
    env = {"DATABASE_URL": f"sqlite:///{database}", "LABQUEUE_DEMO": "1", "LABQUEUE_SYNC_SECONDS": "2"}
    seeded = as_service_account(
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        f"call_command('seed_demo', dataset_root={str(settings.MEDIA_ROOT)!r})\n",
        settings,
        timeout=300,
        **env,
    )
    assert seeded.returncode == 0, seeded.stderr
    return env


def rows(env: dict[str, str], sql: str, *params) -> list[tuple]:
    with sqlite3.connect(env["DATABASE_URL"].removeprefix("sqlite:///")) as database:
        return database.execute(sql, params).fetchall()


def twice_at_once(browser: requests.Session, base: str, page_path: str, action: str, **changes: str):
    """The form on `page_path` that posts to `action`, as shown (plus `changes`), sent twice at once."""
    page = browser.get(base + page_path, timeout=60)
    form = {**form_fields(page.text, action=action), **changes}

    def send(_):
        return browser.post(base + action, data=form, headers={"Referer": page.url}, timeout=60, allow_redirects=False)

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(send, range(2)))
    assert [answer.status_code for answer in answers] == [302, 302], [answer.text[-1500:] for answer in answers]
    assert answers[0].headers["Location"] == answers[1].headers["Location"]
    return answers[0].headers["Location"]


def test_double_clicks_on_sqlite_with_the_worker_and_beat_running_do_everything_once(settings, tmp_path, sqlite_env):
    with running_portal(settings, tmp_path, workers=1, **sqlite_env) as portal:
        portal.start_beat()
        student, ta = (sign_in(portal.base, name, "labqueue-demo") for name in ("student1", "ta1"))

        job_page = twice_at_once(student, portal.base, "/courses/cs101-demo/assignments/gpu-hello/", SUBMIT)
        uuid = job_page.strip("/").split("/")[-1].replace("-", "")
        assert rows(sqlite_env, "SELECT count(*) FROM jobs_job") == [(1,)]
        wait_until(
            lambda: rows(sqlite_env, "SELECT status FROM jobs_job")[0][0] in ("pending", "running"),
            "the job was never sent",
            seconds=120,
        )

        twice_at_once(student, portal.base, job_page, f"{job_page}cancel/")
        wait_until(
            lambda: rows(sqlite_env, "SELECT status FROM jobs_job WHERE uuid = ?", uuid) == [("cancelled",)],
            "the job was never cancelled",
            seconds=120,
        )
        cancels = "SELECT count(*) FROM jobs_jobevent WHERE cause = 'Cancel requested.'"
        assert rows(sqlite_env, cancels) == [(1,)]

        twice_at_once(ta, portal.base, job_page, f"{job_page}notes/", text="Try fewer epochs.")
        assert rows(sqlite_env, "SELECT text FROM jobs_jobnote") == [("Try fewer epochs.",)]

        retried = twice_at_once(student, portal.base, job_page, f"{job_page}retry/", same="1")
        assert retried != job_page
        assert rows(sqlite_env, "SELECT attempt FROM jobs_job ORDER BY attempt") == [(1,), (2,)]
        assert re.search(r"Attempt 2", student.get(portal.base + retried, timeout=60).text)
