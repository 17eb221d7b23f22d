"""The course report page's data: usage aggregates and the reconciliation, in constant queries."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import date, datetime

from django.core.cache import cache
from django.db.models import Count, Max
from django.utils import timezone

from courses.models import Course, Enrollment
from jobs.models import Job
from reports.models import AccountingCursor, UsageRecord
from reports.queries import (
    ReportRange,
    Usage,
    gpu_hours_by_day,
    usage_by_assignment,
    usage_by_cluster,
    usage_by_state,
    usage_by_user,
    usage_records_in_range,
    usage_total,
)
from reports.reconciliation import Reconciliation, reconciliation
from reports.right_sizing import AskedAndUsed, asked_and_used_by_assignment, over_asked_jobs


@dataclass(frozen=True)
class CourseReport:
    course: Course
    window: ReportRange
    total: Usage
    clusters: list[Usage]  # per cluster (usage_by_cluster); the page shows them when there are several
    students: list[Usage]
    assignments: list[Usage]
    states: list[tuple[str, int]]
    days: list[tuple[date, float]]
    reconciliation: Reconciliation | None  # None until Slurm's accounting is first copied
    asked_and_used: list[AskedAndUsed]  # per assignment (reports.right_sizing)
    over_asked: list[Job]  # the first OVER_ASKED_SHOWN jobs that asked for far more than they used


def course_report(*, course: Course, window: ReportRange, now: datetime | None = None) -> CourseReport:
    """Everything on the course report page: fourteen queries, whatever the size of the course."""
    now = now or timezone.now()
    records = usage_records_in_range(window=window, accounts=[course.slurm_account])
    total = usage_total(records=records, window=window, now=now)
    return CourseReport(
        course=course,
        window=window,
        total=total,
        clusters=usage_by_cluster(records=records, window=window, now=now),
        students=usage_by_user(course=course, records=records, window=window, now=now),
        assignments=usage_by_assignment(records=records, window=window, now=now, course=course),
        states=usage_by_state(records=records),
        days=gpu_hours_by_day(records=records, window=window, now=now),
        reconciliation=reconciliation(course=course, window=window, now=now, slurm_side=total),
        asked_and_used=asked_and_used_by_assignment(course=course, window=window),
        over_asked=over_asked_jobs(course=course, window=window),
    )


#: The longest a computed course report is shown again: running jobs' GPU-hours grow while nothing is written.
REPORT_CACHE_SECONDS = 60


def course_report_cached(*, course: Course, window: ReportRange) -> CourseReport:
    """course_report, computed again as soon as anything it reads changed: the ingest cursor (every new or
    updated accounting record comes with an ingest), the course's jobs, its roster; and at least every
    REPORT_CACHE_SECONDS. Whenever it is computed, the reconciliation compares every record as before.
    Four small queries when nothing changed, instead of the report's fourteen over every record."""
    inputs = f"{course.pk}:{window.first}:{window.last}:{_inputs_version(course)}"
    key = "course-report:" + hashlib.sha256(inputs.encode()).hexdigest()  # short and safe for any cache backend
    report = cache.get(key)
    if report is None:
        report = course_report(course=course, window=window)
        cache.set(key, report, REPORT_CACHE_SECONDS)
    return dataclasses.replace(report, course=course)


def _inputs_version(course: Course) -> str:
    """What changes whenever the data a course report reads changes (one value per table it reads). Every
    cluster's ingest mark: the reconciliation compares each job up to its own cluster's (a course's jobs may
    have run on another cluster than the course's now)."""
    jobs = Job.objects.filter(assignment__course=course).order_by().aggregate(n=Count("pk"), at=Max("updated_at"))
    records = (
        UsageRecord.objects.filter(account=course.slurm_account).order_by().aggregate(n=Count("pk"), last=Max("pk"))
    )
    roster = Enrollment.objects.filter(course=course).order_by().aggregate(n=Count("pk"), last=Max("pk"))
    cursors = list(
        AccountingCursor.objects.order_by("cluster").values_list("cluster", "ingested_until", "last_success_at")
    )
    parts = [jobs["n"], jobs["at"], records["n"], records["last"], roster["n"], roster["last"], cursors]
    return ":".join(str(part) for part in parts).replace(" ", "_")
