"""The job lists: a student's own jobs, and a course's jobs and failed jobs for its staff, a page at a time
with counts, searchable, and exported as CSV (every matching row, not one page)."""

import csv
from collections.abc import Iterable, Iterator

from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from courses.models import STAFF_ROLES
from courses.selectors import course_get_for_user
from jobs.explanations import explanation_label, failure_explanation_choices
from jobs.models import Job, Status
from jobs.selectors import failure_counts, job_list, job_list_active, job_list_failed, job_list_for_course
from portal.spreadsheet import spreadsheet_safe

#: Rows on one page of a job list.
LIST_PAGE_SIZE = 50
CSV_HEADER = [
    "job",
    "job id",
    "student",
    "cluster username",
    "assignment",
    "attempt",
    "status",
    "explanation",
    "explanation key",
    "slurm job id",
    "submitted",
    "started",
    "ended",
    "elapsed seconds",
    "gpus",
    "late",
]


def _query_text(request: HttpRequest, key: str) -> str:
    """A filter from the query string. PostgreSQL text cannot hold NUL, so no stored value has one and a
    query holding one would fail: NUL characters are dropped."""
    return request.GET.get(key, "").replace("\x00", "").strip()


def _page(request: HttpRequest, jobs: QuerySet[Job]) -> Page:
    """One page of the list (?page=; a page past the end shows the last, anything not a number the first)."""
    return Paginator(jobs, LIST_PAGE_SIZE).get_page(request.GET.get("page"))


@require_GET
@login_required
def job_list_view(request: HttpRequest) -> HttpResponse:
    course_slug = _query_text(request, "course")
    jobs = _page(request, job_list(user=request.user, course_slug=course_slug))
    courses = {e.course.slug: e.course for e in request.user.enrollments.select_related("course")}
    context = {"jobs": jobs, "courses": courses.values(), "course_slug": course_slug}
    return render(request, "jobs/job_list.html", context)


@require_GET
@login_required
def active_jobs_part(request: HttpRequest) -> HttpResponse:
    """The home page's "Active jobs" box, polled by htmx while a job there is waiting or running."""
    return render(request, "jobs/_active_jobs.html", {"jobs": job_list_active(user=request.user)})


def _course_job_filters(request: HttpRequest) -> dict[str, str]:
    status = _query_text(request, "status")
    filters = {key: _query_text(request, key) for key in ("assignment", "student")}
    return {"status": status if status in Status.values else "", **filters}


@require_GET
@login_required
def course_jobs(request: HttpRequest, slug: str) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    filters = _course_job_filters(request)
    context = {
        "course": course,
        "jobs": _page(request, job_list_for_course(course=course, **filters)),
        "filters": filters,
        "statuses": Status.choices,
        "assignments": course.assignments.all(),
        "export_query": _export_query(request),
    }
    return render(request, "jobs/course_jobs.html", context)


def _failure_filters(request: HttpRequest) -> dict[str, str]:
    return {key: _query_text(request, key) for key in ("assignment", "explanation", "student")}


@require_GET
@login_required
def course_failures(request: HttpRequest, slug: str) -> HttpResponse:
    """The TAs' triage list: failed attempts of the course, newest first, with filters."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    filters = _failure_filters(request)
    counts = failure_counts(course=course, days=7)
    context = {
        "course": course,
        "jobs": _page(request, job_list_failed(course=course, **filters)),
        "filters": filters,
        "counts": [{**row, "label": explanation_label(row["explanation_key"])} for row in counts],
        "assignments": course.assignments.all(),
        "explanations": failure_explanation_choices(),
        "export_query": _export_query(request),
    }
    return render(request, "jobs/course_failures.html", context)


def _export_query(request: HttpRequest) -> str:
    """The list's filters for its CSV link (every page: no ?page=)."""
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


@require_GET
@login_required
def course_jobs_csv(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    jobs = job_list_for_course(course=course, **_course_job_filters(request))
    return _csv_response(f"{course.slug}-jobs-{timezone.localdate()}.csv", jobs)


@require_GET
@login_required
def course_failures_csv(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    jobs = job_list_failed(course=course, **_failure_filters(request))
    return _csv_response(f"{course.slug}-failed-jobs-{timezone.localdate()}.csv", jobs)


class _Echo:
    """A file-like object whose write returns the line, for csv.writer inside a streamed response."""

    def write(self, line: str) -> str:
        return line


def _csv_response(name: str, jobs: QuerySet[Job]) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())
    lines = (writer.writerow([spreadsheet_safe(cell) for cell in row]) for row in _csv_rows(jobs))
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8", headers=headers)


def _csv_rows(jobs: QuerySet[Job]) -> Iterator[list[str]]:
    yield CSV_HEADER
    for job in jobs.iterator(chunk_size=500):
        yield [
            job.title,
            str(job.uuid),
            job.user.username,
            job.run_as,
            job.assignment.title,
            str(job.attempt),
            job.get_status_display(),
            explanation_label(job.explanation_key) if job.explanation_key else "",
            job.explanation_key,
            job.slurm_job_id,
            *_iso(job.created_at, job.started_at, job.ended_at),
            "" if job.elapsed_seconds is None else str(job.elapsed_seconds),
            str(job.gpus),
            "late" if job.late else "",
        ]


def _iso(*times) -> Iterable[str]:
    return [timezone.localtime(time).isoformat() if time else "" for time in times]
