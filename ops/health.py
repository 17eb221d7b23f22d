"""Health for operators and load balancers: /healthz (the process answers) and /readyz (what the portal
depends on answers, and the worker's periodic work is not behind). Both are JSON; /readyz answers 503
when a check fails, naming it. Neither needs a login nor shows anything about people or jobs. What a
failed check found (an error's own text can name a database user or a host) is logged, and shown in the
answer to staff only: anyone else gets each check's name and whether it passed.

In ops, the top layer, because it reads the heartbeats of jobs, clusterpolicy and reports.
"""

import logging
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_GET

from clusterpolicy.models import AssociationRun
from jobs.models import Heartbeat
from portal.celery import app
from reports.models import AccountingCursor

logger = logging.getLogger(__name__)

#: A periodic task is behind when it has not finished for this many of its periods.
PERIODS_BEHIND = 3


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks = {}
    for name, check in (
        ("database", _database),
        ("broker", _broker),
        ("job_sync", _job_sync),
        ("usage_ingest", _usage_ingest),
        ("association_reconcile", _association_reconcile),
    ):
        try:
            problem = check()
        except Exception as error:  # a check that breaks is a failed check, never a 500
            problem = f"{type(error).__name__}: {error}"
        if problem:
            logger.warning("readyz: the %s check failed: %s", name, problem)
        checks[name] = {"ok": not problem, "detail": problem or "ok"}
    ready = all(check["ok"] for check in checks.values())
    if not request.user.is_staff:
        checks = {name: {"ok": check["ok"]} for name, check in checks.items()}
    return JsonResponse({"status": "ok" if ready else "fail", "checks": checks}, status=200 if ready else 503)


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return ""


def _broker() -> str:
    with app.connection_for_write() as broker:
        broker.ensure_connection(max_retries=1, timeout=2)
    return ""


def _behind(last: datetime | None, period: int, what: str) -> str:
    if last is None:
        return f"{what} has not run yet (is Celery beat running, and one worker?)"
    age = (timezone.now() - last).total_seconds()
    if age > PERIODS_BEHIND * period:
        return f"{what} last finished {age:.0f} s ago; it runs every {period} s"
    return ""


def job_sync_last() -> datetime | None:
    """When the job-status sync last finished (its heartbeat)."""
    return Heartbeat.objects.filter(name="jobs_sync").values_list("at", flat=True).first()


def job_sync_period() -> int:
    return max(settings.LABQUEUE_SYNC_SECONDS, 10)


def usage_ingest_last() -> datetime | None:
    """When Slurm's accounting was last copied into the portal without an error."""
    cursor = AccountingCursor.objects.filter(cluster=settings.LABQUEUE_SLURM_CLUSTER).first()
    return cursor.last_success_at if cursor else None


def association_reconcile_last() -> datetime | None:
    """When the last (not dry-run) association reconciliation finished."""
    run = AssociationRun.objects.filter(dry_run=False).exclude(finished_at=None).order_by("-finished_at").first()
    return run.finished_at if run else None


def _job_sync() -> str:
    return _behind(job_sync_last(), job_sync_period(), "the job-status sync")


def _usage_ingest() -> str:
    return _behind(usage_ingest_last(), settings.LABQUEUE_USAGE_INGEST_SECONDS, "usage ingest")


def _association_reconcile() -> str:
    return _behind(association_reconcile_last(), settings.LABQUEUE_RECONCILE_SECONDS, "the association reconciliation")


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
]
