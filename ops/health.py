"""Health for operators and load balancers: /healthz (the process answers) and /readyz (the portal can
serve: what it depends on answers, and the worker's periodic work is not behind). Both are JSON and answer
HEAD as GET (many monitors probe with HEAD); /readyz answers 503 when a check fails, naming it. Neither needs
a login nor shows anything about people or jobs. What a failed check found (an error's own text can name a
database user or a host) is logged as a warning, and shown in the answer to staff only: anyone else gets each
check's name and whether it passed.

A periodic task that has never finished is "not yet", not a failure, while the installation is younger than
three of its periods (counted from the last migration applied: the install or the upgrade). So a fresh
install is ready as soon as the database, the broker and the workers answer (the job-status sync runs every
few seconds and proves beat and the sync worker run), though the usage ingest and the association
reconciliation first run minutes later.

In ops, the top layer, because it reads the heartbeats of jobs, clusterpolicy and reports.
"""

import logging
from datetime import datetime

from django.conf import settings
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Max
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_safe

from clusterpolicy.models import AssociationRun
from jobs.models import Heartbeat
from portal.celery import app
from reports.models import AccountingCursor

logger = logging.getLogger(__name__)

#: A periodic task is behind when it has not finished for this many of its periods.
PERIODS_BEHIND = 3
#: ... and never sooner than this many seconds after it last finished (a sync every 2 s is not late at 7 s).
LATE_AFTER_AT_LEAST = 30
#: What a check answers for a periodic task whose first run is still to come.
NOT_YET = "not yet: "


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_safe
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
        not_yet = problem.startswith(NOT_YET)
        if problem and not not_yet:
            logger.warning("readyz: the %s check failed: %s", name, problem)
        checks[name] = {"ok": not problem or not_yet, "detail": problem or "ok"} | (
            {"not_yet": True} if not_yet else {}
        )
    ready = all(check["ok"] for check in checks.values())
    if not request.user.is_staff:
        checks = {
            name: {key: check[key] for key in ("ok", "not_yet") if key in check} for name, check in checks.items()
        }
    response = JsonResponse({"status": "ok" if ready else "fail", "checks": checks}, status=200 if ready else 503)
    # Not ready is an answer, logged above as a warning per failed check: Django would also log every 503 as an
    # ERROR ("Service Unavailable"), as if the portal had failed, unless told it has been logged.
    response._has_been_logged = True
    return response


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return ""


def _broker() -> str:
    with app.connection_for_write() as broker:
        broker.ensure_connection(max_retries=1, timeout=2)
    return ""


def late_after(period: float) -> float:
    """Seconds after its last run at which a periodic task of this period counts as behind."""
    return max(PERIODS_BEHIND * period, LATE_AFTER_AT_LEAST)


def installed_at() -> datetime | None:
    """When the last migration was applied: the install, or the last upgrade that migrated."""
    return MigrationRecorder.Migration.objects.aggregate(at=Max("applied"))["at"]


def _behind(last: datetime | None, period: float, what: str, *, first_run_may_wait: bool = False) -> str:
    now = timezone.now()
    if last is None:
        installed = installed_at() if first_run_may_wait else None
        if installed and (now - installed).total_seconds() <= late_after(period):
            return f"{NOT_YET}{what} has not run since the install; its first run comes within {period:.0f} s"
        return f"{what} has not run yet (is Celery beat running, and one worker?)"
    age = (now - last).total_seconds()
    if age > late_after(period):
        return f"{what} last finished {age:.0f} s ago; it runs every {period:g} s"
    return ""


def job_sync_last() -> datetime | None:
    """When the job-status sync last finished (its heartbeat)."""
    return Heartbeat.objects.filter(name="jobs_sync").values_list("at", flat=True).first()


def job_sync_period() -> float:
    """Seconds between two job-status syncs, as Celery beat sends them."""
    return float(settings.CELERY_BEAT_SCHEDULE["jobs-sync"]["schedule"])


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
    return _behind(usage_ingest_last(), settings.LABQUEUE_USAGE_INGEST_SECONDS, "usage ingest", first_run_may_wait=True)


def _association_reconcile() -> str:
    return _behind(
        association_reconcile_last(),
        settings.LABQUEUE_RECONCILE_SECONDS,
        "the association reconciliation",
        first_run_may_wait=True,
    )


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
]
