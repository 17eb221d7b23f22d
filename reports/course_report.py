"""The course report page's data: usage aggregates and the reconciliation, in constant queries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from django.utils import timezone

from courses.models import Course
from reports.queries import (
    ReportRange,
    Usage,
    gpu_hours_by_day,
    usage_by_assignment,
    usage_by_state,
    usage_by_user,
    usage_records_in_range,
    usage_total,
)
from reports.reconciliation import Reconciliation, reconciliation


@dataclass(frozen=True)
class CourseReport:
    course: Course
    window: ReportRange
    total: Usage
    students: list[Usage]
    assignments: list[Usage]
    states: list[tuple[str, int]]
    days: list[tuple[date, float]]
    reconciliation: Reconciliation


def course_report(*, course: Course, window: ReportRange, now: datetime | None = None) -> CourseReport:
    """Everything on the course report page: ten queries, whatever the size of the course."""
    now = now or timezone.now()
    records = usage_records_in_range(window=window, accounts=[course.slurm_account])
    total = usage_total(records=records, window=window, now=now)
    return CourseReport(
        course=course,
        window=window,
        total=total,
        students=usage_by_user(course=course, records=records, window=window, now=now),
        assignments=usage_by_assignment(records=records, window=window, now=now, course=course),
        states=usage_by_state(records=records),
        days=gpu_hours_by_day(records=records, window=window, now=now),
        reconciliation=reconciliation(course=course, window=window, now=now, slurm_side=total),
    )
