"""The course policy page and lab sessions (instructors and operations staff)."""

from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from courses.forms import CoursePolicyForm, LabSeriesForm, LabSessionForm
from courses.models import Role
from courses.selectors import course_ceilings, course_get_for_user, lab_session_get, lab_session_list
from courses.services import (
    course_policy_update,
    lab_series_cancel_rest,
    lab_series_schedule,
    lab_session_cancel,
    lab_session_schedule,
)


@require_http_methods(["GET", "POST"])
@login_required
def course_policy(request: HttpRequest, slug: str) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    ceilings = course_ceilings(course=course)
    form = CoursePolicyForm(request.POST or None, instance=course, ceilings=ceilings)
    if request.method == "POST" and form.is_valid():
        try:
            course_policy_update(course=course, fields=form.cleaned_data, actor=request.user)
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(request, "Policy saved. The portal enforces it now; the cluster follows within a minute.")
            return redirect("courses:course-policy", slug=course.slug)
    context = {"course": course, "form": form, "ceilings": ceilings}
    return render(request, "courses/course_policy.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
@login_required
def lab_session_list_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The course's labs; one lab, or a weekly series of them (the form sent with `weekly`), scheduled here."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    weekly = "weekly" in request.POST
    form = LabSessionForm(None if weekly else request.POST or None)
    series_form = LabSeriesForm(request.POST if weekly else None)
    sent = series_form if weekly else form
    if request.method == "POST" and sent.is_valid():
        data = sent.cleaned_data
        try:
            if weekly:
                series = lab_series_schedule(
                    course=course,
                    weekday=data["weekday"],
                    start_time=data["start_time"],
                    minutes=data["minutes"],
                    first_date=data["first_date"],
                    last_date=data["last_date"],
                    skipped=data["skip"],
                    nodes=data["nodes"],
                    gpus=data["gpus"],
                    actor=request.user,
                )
                done = f"Weekly lab scheduled: {series.sessions.count()} sessions."
            else:
                lab_session_schedule(
                    course=course,
                    starts_at=data["starts_at"],
                    ends_at=data["ends_at"],
                    nodes=data["nodes"],
                    gpus=data["gpus"],
                    actor=request.user,
                )
                done = "Lab scheduled."
        except ValidationError as error:
            sent.add_error(None, error)
        else:
            messages.success(request, f"{done} The cluster reserves each lab shortly before it starts.")
            return redirect("courses:lab-list", slug=course.slug)
    context = {
        "course": course,
        "form": form,
        "series_form": series_form,
        "sessions": lab_session_list(course=course),
        "strategy": settings.LABQUEUE_RESERVATION_STRATEGY,
        "time_zone": settings.TIME_ZONE,
    }
    return render(request, "courses/lab_session_list.html", context, status=400 if sent.errors else 200)


@require_POST
@login_required
def lab_series_cancel_rest_view(request: HttpRequest, slug: str, session_uuid: UUID) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    session = lab_session_get(course=course, session_uuid=session_uuid)
    try:
        cancelled = lab_series_cancel_rest(session=session, actor=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"{cancelled} lab(s) of the weekly series cancelled; their reservations are removed.")
    return redirect("courses:lab-list", slug=course.slug)


@require_POST
@login_required
def lab_session_cancel_view(request: HttpRequest, slug: str, session_uuid: UUID) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    session = lab_session_get(course=course, session_uuid=session_uuid)
    try:
        lab_session_cancel(session=session, actor=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Lab cancelled; its reservation is removed.")
    return redirect("courses:lab-list", slug=course.slug)
