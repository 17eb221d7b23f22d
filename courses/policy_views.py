"""The course policy page and lab sessions (instructors and operations staff)."""

from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from courses.forms import CoursePolicyForm, LabSessionForm
from courses.models import Role
from courses.selectors import course_ceilings, course_get_for_user, lab_session_get, lab_session_list
from courses.services import course_policy_update, lab_session_cancel, lab_session_schedule


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
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    form = LabSessionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            lab_session_schedule(
                course=course,
                starts_at=data["starts_at"],
                ends_at=data["ends_at"],
                nodes=data["nodes"],
                gpus=data["gpus"],
                actor=request.user,
            )
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(request, "Lab scheduled. The cluster reserves it shortly before it starts.")
            return redirect("courses:lab-list", slug=course.slug)
    context = {
        "course": course,
        "form": form,
        "sessions": lab_session_list(course=course),
        "strategy": settings.LABQUEUE_RESERVATION_STRATEGY,
    }
    return render(request, "courses/lab_session_list.html", context, status=400 if form.errors else 200)


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
