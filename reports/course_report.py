"""The course report page's data: usage aggregates and the reconciliation, in constant queries, kept in the
reports cache (a table every web process and worker shares) and computed again after a change, by the worker
after each accounting ingest or by the first request that finds it out of date."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.core.cache import caches
from django.db.models import Count, Max
from django.utils import timezone

from courses.models import Course, Enrollment
from jobs.models import Job
from reports.forms import course_default_first
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
    computed_at: datetime  # the page says "as of": running jobs count up to this moment
    updating: bool = False  # shown while newer figures are being computed (course_report_cached)


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
        computed_at=now,
    )


#: The longest a computed course report is shown as current: running jobs' GPU-hours grow while nothing is written.
REPORT_CACHE_SECONDS = 60
#: How long a computed report stays in the cache, to be shown (marked as being updated) while a newer one is computed.
REPORT_KEPT_SECONDS = 24 * 3600
#: How long one request or worker may take to compute a report before another one starts too.
COMPUTING_SECONDS = 120
CACHE = "reports"
COMPUTING = ":computing"  # the key, after a report's, of the mark that one request or worker computes it


def course_report_cached(*, course: Course, window: ReportRange) -> CourseReport:
    """course_report, computed again when anything it reads changed: the ingest marks (every new or updated
    accounting record comes with an ingest), the course's jobs, its roster; and after REPORT_CACHE_SECONDS.
    Whenever it is computed, the reconciliation compares every record as before. Four small queries and one
    read of the cache when nothing changed, instead of the report's fourteen over every record.

    One request computes an out-of-date report at a time: while it (or the worker, after an ingest) does, the
    others show the last report, marked as being updated, instead of all computing the same one at once."""
    key, version = _cache_key(course, window), _inputs_version(course)
    kept = caches[CACHE].get(key)
    if kept is None:
        return _computed_and_kept(course=course, window=window, key=key, version=version)
    kept_version, report = kept
    if kept_version == version and timezone.now() - report.computed_at < timedelta(seconds=REPORT_CACHE_SECONDS):
        return dataclasses.replace(report, course=course)
    if not caches[CACHE].add(key + COMPUTING, True, COMPUTING_SECONDS):
        return dataclasses.replace(report, course=course, updating=True)
    try:
        return _computed_and_kept(course=course, window=window, key=key, version=version)
    finally:
        caches[CACHE].delete(key + COMPUTING)


def course_reports_refresh(*, accounts: set[str]) -> None:
    """The report of each course an accounting ingest brought records for, over the range its page opens on,
    computed and kept before a person asks, as the first request after the change would: the page reads it
    instead of computing it. Each is marked as being computed first, so a request meanwhile shows the last one."""
    courses = Course.objects.filter(slurm_account__in=accounts).order_by("pk")
    keys = [(course, _page_range(course)) for course in courses]
    caches[CACHE].set_many({_cache_key(course, window) + COMPUTING: True for course, window in keys}, COMPUTING_SECONDS)
    for course, window in keys:
        key = _cache_key(course, window)
        try:
            _computed_and_kept(course=course, window=window, key=key, version=_inputs_version(course))
        finally:
            caches[CACHE].delete(key + COMPUTING)


def _page_range(course: Course) -> ReportRange:
    """The range the course's report page opens on: from the day the course was made to today."""
    return ReportRange.for_days(course_default_first(course), timezone.localdate())


def course_reports_forget() -> None:
    """Drop every kept report (a person was forgotten: their name may be in one)."""
    caches[CACHE].clear()


def _computed_and_kept(*, course: Course, window: ReportRange, key: str, version: str) -> CourseReport:
    """The report computed now, kept with the version of its inputs read before it was computed (a change while it
    is computed makes the next request compute it again)."""
    report = course_report(course=course, window=window)
    caches[CACHE].set(key, (version, report), REPORT_KEPT_SECONDS)
    return report


def _cache_key(course: Course, window: ReportRange) -> str:
    """The report's key: its course, its range, and the shape of what is kept (a release that changes the report's
    fields never reads a report an older one kept)."""
    shapes = [[field.name for field in dataclasses.fields(kind)] for kind in (CourseReport, Usage, Reconciliation)]
    inputs = f"{course.pk}:{window.start.isoformat()}:{window.end.isoformat()}:{shapes}"
    return "course-report:" + hashlib.sha256(inputs.encode()).hexdigest()  # short and safe for any cache backend


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
