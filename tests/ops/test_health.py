"""/healthz and /readyz, as a load balancer asks them (no login) and as staff read what a failed check found."""

from datetime import timedelta

import pytest
from django.utils import timezone

from clusterpolicy.models import AssociationRun
from clusterpolicy.tasks import associations_reconcile
from jobs.models import Heartbeat
from jobs.tasks import jobs_sync
from reports.models import AccountingCursor
from reports.tasks import usage_ingest

pytestmark = pytest.mark.slurm


def test_healthz_answers_while_the_process_is_alive(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_says_which_periodic_work_has_not_run_and_answers_503(admin_client, db):
    response = admin_client.get("/readyz")

    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"] == {"ok": True, "detail": "ok"}
    assert checks["broker"] == {"ok": True, "detail": "ok"}
    assert checks["job_sync"]["ok"] is False
    assert "has not run yet (is Celery beat running" in checks["job_sync"]["detail"]


def test_readyz_is_ready_once_the_worker_has_done_each_periodic_task_and_not_when_one_falls_behind(
    client, admin_client, db, settings
):
    jobs_sync()
    usage_ingest()
    associations_reconcile()

    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.json()
    assert ready.json()["status"] == "ok"

    Heartbeat.objects.filter(name="jobs_sync").update(at=timezone.now() - timedelta(minutes=5))
    behind = admin_client.get("/readyz")
    assert behind.status_code == 503
    assert behind.json()["checks"]["job_sync"]["detail"].startswith("the job-status sync last finished 30")


def test_readyz_fails_when_usage_ingest_or_the_association_reconciliation_falls_behind(admin_client, db, settings):
    jobs_sync()
    usage_ingest()
    associations_reconcile()
    long_ago = timezone.now() - timedelta(days=1)

    AccountingCursor.objects.filter(cluster=settings.LABQUEUE_SLURM_CLUSTER).update(last_success_at=long_ago)
    AssociationRun.objects.update(finished_at=long_ago)
    response = admin_client.get("/readyz")

    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["job_sync"]["ok"] is True
    assert checks["usage_ingest"]["detail"].startswith("usage ingest last finished 86")
    assert checks["association_reconcile"]["detail"].startswith("the association reconciliation last finished 86")
