"""/readyz on a fresh install, and HEAD as monitors send it: ready once the database, the broker and the
workers answer (the job-status sync has run), while the periodic work whose first run is minutes away says
"not yet" without failing the probe or logging a failure."""

import logging
import uuid
from datetime import timedelta

import pytest
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from jobs.models import Heartbeat

pytestmark = pytest.mark.django_db


def installed(ago: timedelta) -> None:
    """The migrations applied `ago`: the install (or the last upgrade that migrated)."""
    MigrationRecorder.Migration.objects.update(applied=timezone.now() - ago)


def job_sync_ran(ago: timedelta = timedelta(0)) -> None:
    """The heartbeat the job-status sync leaves when it finishes (jobs.tasks.jobs_sync)."""
    Heartbeat.objects.update_or_create(name="jobs_sync", defaults={"at": timezone.now() - ago})


def test_a_fresh_install_is_ready_once_the_job_sync_ran_and_the_first_ingest_and_reconciliation_say_not_yet(
    client, admin_client, caplog
):
    installed(timedelta(seconds=20))
    job_sync_ran()

    with caplog.at_level(logging.INFO, logger="ops.health"):
        anonymous = client.get("/readyz")
        staff = admin_client.get("/readyz")

    assert anonymous.status_code == 200, anonymous.json()
    assert anonymous.json()["checks"]["usage_ingest"] == {"ok": True, "not_yet": True}
    checks = staff.json()["checks"]
    for name in ("usage_ingest", "association_reconcile"):
        assert checks[name]["ok"] is True and checks[name]["not_yet"] is True
        assert checks[name]["detail"].startswith("not yet: "), checks[name]
    assert "first run comes within 300 s" in checks["usage_ingest"]["detail"]
    assert checks["job_sync"] == {"ok": True, "detail": "ok"}
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING], caplog.text


def test_periodic_work_that_never_ran_fails_once_the_install_is_older_than_three_of_its_periods(admin_client):
    installed(timedelta(days=1))
    job_sync_ran()

    response = admin_client.get("/readyz")

    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["usage_ingest"]["ok"] is False and "not_yet" not in checks["usage_ingest"]
    assert checks["usage_ingest"]["detail"] == "usage ingest has not run yet (is Celery beat running, and one worker?)"


def test_until_the_job_sync_first_ran_readyz_fails_with_a_warning_and_no_error_logged(admin_client, caplog):
    installed(timedelta(seconds=5))

    with caplog.at_level(logging.INFO):
        response = admin_client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["checks"]["job_sync"]["ok"] is False
    assert [record.levelname for record in caplog.records if record.name == "ops.health"] == ["WARNING"]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR], caplog.text


def test_the_job_sync_is_late_after_three_of_its_real_periods_and_says_how_often_it_runs(admin_client, settings):
    settings.CELERY_BEAT_SCHEDULE = {**settings.CELERY_BEAT_SCHEDULE, "jobs-sync": {"schedule": 20.0}}
    installed(timedelta(days=1))
    job_sync_ran(timedelta(seconds=75))

    detail = admin_client.get("/readyz").json()["checks"]["job_sync"]["detail"]

    assert detail == "the job-status sync last finished 75 s ago; it runs every 20 s"


def test_head_answers_healthz_and_readyz_as_get_does_without_a_body(client):
    installed(timedelta(seconds=20))
    job_sync_ran()

    for path in ("/healthz", "/readyz"):
        got, head = client.get(path), client.head(path)
        assert head.status_code == got.status_code == 200, (path, head.status_code)
        assert head.content == b""
        assert head["Content-Type"] == got["Content-Type"]
        assert int(head["Content-Length"]) == len(got.content)


def test_head_answers_a_page_as_get_does_and_a_post_only_address_still_refuses_it(client, student):
    client.force_login(student)

    got, head = client.get("/jobs/"), client.head("/jobs/")
    assert head.status_code == got.status_code == 200
    assert head.content == b"" and int(head["Content-Length"]) == len(got.content)
    assert client.head(f"/jobs/{uuid.uuid4()}/cancel/").status_code == 405
