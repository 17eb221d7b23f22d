import csv
from decimal import Decimal, InvalidOperation
from functools import partial

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from courses.models import STAFF_ROLES
from courses.selectors import course_get_for_user
from portal.spreadsheet import spreadsheet_safe
from reports import right_sizing
from reports.course_report import REPORT_CACHE_SECONDS, course_report_cached
from reports.forms import course_default_first, overview_default_first, range_from_request
from reports.overview import usage_overview_kept
from reports.queries import (
    DIFFERENCES_SHOWN,
    Usage,
    my_usage,
)
from reports.right_sizing import asked_and_used_by_assignment, over_asked_jobs
from reports.svg import gpu_hours_chart


@require_GET
@login_required
def course_report_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Course staff only (TAs read it like instructors); students get 403, non-members 404."""
    course, role = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    window, form = range_from_request(request.GET, default_first=course_default_first(course))
    report = course_report_cached(course=course, window=window)
    context = {
        "course": course,
        "role": role,
        "report": report,
        "several_clusters": len(report.clusters) > 1,
        "form": form,
        "header": Usage.HEADER,
        "chart": partial(gpu_hours_chart, report.days),  # drawn only when the page's body is not cached
        "body_seconds": REPORT_CACHE_SECONDS,
        "query": request.GET.urlencode(),
        "time_zone": settings.TIME_ZONE,
        "shown": DIFFERENCES_SHOWN,
        "asked_header": right_sizing.HEADER,
        "over_asked_shown": right_sizing.OVER_ASKED_SHOWN,
    }
    return render(request, "reports/course_report.html", context)


@require_GET
@login_required
def course_asked_and_used_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """The report's "Asked for and used" per assignment, then every job that asked for far more, as CSV."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    window, _ = range_from_request(request.GET, default_first=course_default_first(course))
    name = f"{course.slug}-asked-and-used-{window.first}-{window.last}.csv"
    response = HttpResponse(content_type="text/csv", headers={"Content-Disposition": f'attachment; filename="{name}"'})
    rows = [
        right_sizing.HEADER,
        *(row.cells for row in asked_and_used_by_assignment(course=course, window=window)),
        [],
        right_sizing.JOB_HEADER,
        *(right_sizing.job_cells(job) for job in over_asked_jobs(course=course, window=window, limit=None)),
    ]
    csv.writer(response).writerows([spreadsheet_safe(str(cell)) for cell in row] for row in rows)
    return response


@require_GET
@login_required
def course_report_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """The page's rows (per cluster when there are several, total, per student, per assignment) as CSV."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    window, _ = range_from_request(request.GET, default_first=course_default_first(course))
    report = course_report_cached(course=course, window=window)
    name = f"{course.slug}-usage-{window.first}-{window.last}.csv"
    response = HttpResponse(content_type="text/csv", headers={"Content-Disposition": f'attachment; filename="{name}"'})
    writer = csv.writer(response)
    rows = [
        ["Section", *Usage.HEADER],
        *(["cluster", *row.cells] for row in report.clusters if len(report.clusters) > 1),
        ["total", *report.total.cells],
        *(["student", *row.cells] for row in report.students),
        *(["assignment", *row.cells] for row in report.assignments),
    ]
    writer.writerows([spreadsheet_safe(cell) for cell in row] for row in rows)
    return response


@require_GET
@login_required
def course_statement(request: HttpRequest, slug: str) -> HttpResponse:
    """A printable usage statement; money appears only as an estimate from LABQUEUE_BILLING_RATE."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    window, form = range_from_request(request.GET, default_first=course_default_first(course))
    report = course_report_cached(course=course, window=window)
    rate = _billing_rate()
    rows = [(row, _estimate(row, rate)) for row in report.assignments]
    clusters = [(row, _estimate(row, rate)) for row in report.clusters] if len(report.clusters) > 1 else []
    context = {
        "course": course,
        "report": report,
        "rows": rows,
        "clusters": clusters,
        "rate": rate,
        "form": form,
        "total_estimate": _estimate(report.total, rate),
        "currency": settings.LABQUEUE_BILLING_CURRENCY,
    }
    return render(request, "reports/course_statement.html", context)


@require_GET
@login_required
def my_usage_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Anyone in the course sees their own usage on its account, and only their own."""
    course, role = course_get_for_user(user=request.user, slug=slug)
    window, form = range_from_request(request.GET, default_first=course_default_first(course))
    usage = my_usage(course=course, netid=request.user.netid or "", window=window)
    context = {
        "course": course,
        "role": role,
        "usage": usage,
        "several_clusters": len(usage.clusters) > 1,
        "form": form,
        "header": Usage.HEADER,
        "chart": gpu_hours_chart(usage.days, title="Your GPU-hours per day"),
        "window": window,
        "is_course_staff": role in STAFF_ROLES,
    }
    return render(request, "reports/my_usage.html", context)


@require_GET
@login_required
def usage_overview_view(request: HttpRequest) -> HttpResponse:
    """All courses side by side, for operations staff; per cluster too on a site of several clusters (only there
    are the records of the range summed twice more)."""
    if not request.user.is_staff:
        raise PermissionDenied("Only operations staff see all courses.")
    first = overview_default_first(days=settings.LABQUEUE_REPORT_DEFAULT_DAYS)
    window, form = range_from_request(request.GET, default_first=first)
    overview = usage_overview_kept(window=window)
    context = {"rows": overview.rows, "totals": overview.totals, "form": form, "window": window, "report": overview}
    return render(request, "reports/usage_overview.html", context)


def _billing_rate() -> Decimal | None:
    try:
        return Decimal(settings.LABQUEUE_BILLING_RATE) if settings.LABQUEUE_BILLING_RATE else None
    except InvalidOperation:
        return None


def _estimate(row: Usage, rate: Decimal | None) -> Decimal | None:
    if rate is None:
        return None
    return (Decimal(row.billing_seconds) / 3600 * rate).quantize(Decimal("0.01"))
