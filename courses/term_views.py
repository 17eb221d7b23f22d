"""Pages for carrying a course into the next term: an assignment exported to and imported from a YAML file, and a
course copied to a new term. Instructors only (TAs may export); each change is previewed first."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from courses.assignment_yaml import assignment_export, assignment_import, assignment_import_plan
from courses.forms import AssignmentImportConfirmForm, AssignmentImportForm, CourseCopyForm
from courses.models import COURSE_POLICY_FIELDS, STAFF_ROLES, Role
from courses.selectors import assignment_get, course_get_for_user
from courses.services import course_copy


@require_GET
@login_required
def assignment_export_view(request: HttpRequest, slug: str, assignment_slug: str) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    assignment = assignment_get(course=course, slug=assignment_slug)
    headers = {"Content-Disposition": f'attachment; filename="{course.slug}-{assignment.slug}.yaml"'}
    return HttpResponse(
        assignment_export(assignment=assignment), content_type="text/yaml; charset=utf-8", headers=headers
    )


@require_http_methods(["GET", "POST"])
@login_required
def assignment_import_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Upload a file, read the preview (or its line-numbered problems), then apply exactly that file."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    confirming = "confirm" in request.POST
    uploading = request.method == "POST" and not confirming
    form = AssignmentImportForm(request.POST if uploading else None, request.FILES if uploading else None)
    plan, text = None, ""
    if confirming and (confirm := AssignmentImportConfirmForm(request.POST)).is_valid():
        text = confirm.cleaned_data["yaml_text"]
        try:
            saved = assignment_import(course=course, text=text, actor=request.user)
        except ValidationError:
            plan = assignment_import_plan(course=course, text=text)
            messages.error(
                request, "The course changed since the preview, and the file no longer fits. Nothing changed."
            )
        else:
            messages.success(request, f"Imported “{saved.title}”. This is the script students' jobs will run.")
            return redirect("jobs:assignment-detail", slug=course.slug, assignment_slug=saved.slug)
    elif uploading and form.is_valid():
        text = form.cleaned_data["assignment_file"]
        plan = assignment_import_plan(course=course, text=text)
    confirm = AssignmentImportConfirmForm(initial={"yaml_text": text}) if plan and plan.ok else None
    context = {"course": course, "form": form, "plan": plan, "confirm": confirm}
    refused = (plan and not plan.ok) or form.errors
    return render(request, "courses/assignment_import.html", context, status=400 if refused else 200)


@require_http_methods(["GET", "POST"])
@login_required
def course_copy_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The new term's names and cluster account, with what will be copied; the copy on "Copy"."""
    source, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    initial = {"code": source.code, "title": source.title}
    form = CourseCopyForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            course = course_copy(source=source, fields=form.cleaned_data, actor=request.user)
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(
                request,
                f"{course} is ready, with {course.assignments.count()} assignments. Its cluster account "
                f"{course.slurm_account} is created by the next association run (within minutes); then add the "
                "class list under Roster.",
            )
            return redirect("courses:course-detail", slug=course.slug)
    context = {
        "course": source,
        "form": form,
        "assignments": source.assignments.order_by("title").prefetch_related("starter_files", "datasets"),
        "hints": source.hints.count(),
        "datasets": source.datasets.order_by("name"),
        "policy": [(source._meta.get_field(name).verbose_name, getattr(source, name)) for name in COURSE_POLICY_FIELDS],
    }
    return render(request, "courses/course_copy.html", context, status=400 if form.errors else 200)
