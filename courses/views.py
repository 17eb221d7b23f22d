import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from courses.forms import (
    AssignmentForm,
    HintForm,
    ParameterFormSet,
    RosterConfirmForm,
    RosterUploadForm,
    parameter_preview_form,
    parameter_rows,
)
from courses.models import STAFF_ROLES, Assignment, Role
from courses.roster import roster_plan
from courses.selectors import (
    assignment_get,
    assignment_list,
    assignment_preview,
    course_get_for_user,
    enrollment_list,
    lab_session_next,
    roster_current,
)
from courses.services import assignment_save, roster_confirm


@require_GET
@login_required
def course_list(request: HttpRequest) -> HttpResponse:
    """The home page: active jobs, each course with its next lab and budget, recent failures."""
    courses = [
        (enrollment, lab_session_next(course=enrollment.course)) for enrollment in enrollment_list(user=request.user)
    ]
    return render(request, "courses/course_list.html", {"courses": courses})


@require_GET
@login_required
def course_detail(request: HttpRequest, slug: str) -> HttpResponse:
    course, role = course_get_for_user(user=request.user, slug=slug)
    context = {"course": course, "role": role, "assignments": assignment_list(course=course)}
    context["next_lab"] = lab_session_next(course=course)
    return render(request, "courses/course_detail.html", {**context, "is_course_staff": role in STAFF_ROLES})


@require_http_methods(["GET", "POST"])
@login_required
def assignment_edit(request: HttpRequest, slug: str, assignment_slug: str | None = None) -> HttpResponse:
    """The assignment form with its parameter editor; "Preview" (or any change, through htmx) shows the exact
    script and the student's form, "Save" keeps a new version when the script or parameters changed."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    assignment = assignment_get(course=course, slug=assignment_slug) if assignment_slug else None
    instance = assignment or Assignment(course=course)
    data, editor, json_edited = _parameter_editor(request, instance)
    form = AssignmentForm(data, request.FILES or None, course=course, instance=instance)
    ready = data is not None and form.is_valid() and (json_edited or editor.is_valid())
    preview, student_form = "", None
    if ready and "save" in data:
        fields = {k: v for k, v in form.cleaned_data.items() if k not in ("datasets", "starter_file")}
        saved = assignment_save(
            course=course,
            fields=fields,
            datasets=list(form.cleaned_data["datasets"]),
            assignment=assignment,
            starter_file=form.cleaned_data.get("starter_file"),
            actor=request.user,
        )
        messages.success(request, f"Saved “{saved.title}”. This is the script students' jobs will run.")
        return redirect("jobs:assignment-detail", slug=course.slug, assignment_slug=saved.slug)
    if ready:
        if json_edited:  # the JSON was changed by hand: the editor shows it
            editor = ParameterFormSet(prefix="param", initial=parameter_rows(form.cleaned_data["parameters"]))
        preview = assignment_preview(assignment=form.save(commit=False))
        student_form = parameter_preview_form(form.cleaned_data["parameters"])
    context = {
        "course": course,
        "form": form,
        "editor": editor,
        "assignment": assignment,
        "preview": preview,
        "student_form": student_form,
        "parameters_shown": form["parameters"].value() or "[]",
    }
    return render(request, "courses/assignment_form.html", context)


def _parameter_editor(request: HttpRequest, instance: Assignment):
    """The POST data (the editor's rows written into the JSON field, unless the JSON itself was edited), the
    editor's formset, and whether the JSON was edited. "Add a parameter" adds an empty row."""
    if request.method != "POST":
        return None, ParameterFormSet(prefix="param", initial=parameter_rows(instance.parameters)), False
    data = request.POST.copy()
    if "add_parameter" in data:
        data["param-TOTAL_FORMS"] = str(int(data.get("param-TOTAL_FORMS") or 0) + 1)
    editor = ParameterFormSet(data, prefix="param")
    # A client without the editor (a script, an older page) sends the JSON alone: then it is the source.
    json_edited = "param-TOTAL_FORMS" not in data or (
        data.get("parameters", "").strip() != data.get("parameters_shown", "").strip()
    )
    if not json_edited and editor.is_valid():
        data["parameters"] = json.dumps(editor.schema(), indent=2)
    return data, editor, json_edited


@require_http_methods(["GET", "POST"])
@login_required
def hint_list(request: HttpRequest, slug: str) -> HttpResponse:
    """An instructor's hints, shown to students whose failed job matches."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    form = HintForm(request.POST or None, course=course)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Hint saved. It shows on failed jobs that match.")
        return redirect("courses:hint-list", slug=course.slug)
    hints = course.hints.select_related("assignment")
    return render(request, "courses/hint_list.html", {"course": course, "form": form, "hints": hints})


@require_POST
@login_required
def hint_delete(request: HttpRequest, slug: str, hint_id: int) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    get_object_or_404(course.hints, pk=hint_id).delete()
    messages.success(request, "Hint deleted.")
    return redirect("courses:hint-list", slug=course.slug)


@require_http_methods(["GET", "POST"])
@login_required
def roster_import(request: HttpRequest, slug: str) -> HttpResponse:
    """Upload a roster CSV, preview adds / role changes / drops, then confirm exactly that preview."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    keep = frozenset({request.user.netid} - {None})
    confirming = "confirm" in request.POST
    form = RosterUploadForm(None if confirming else request.POST or None, None if confirming else request.FILES or None)
    text, plan = "", None
    if confirming and (confirm := RosterConfirmForm(request.POST)).is_valid():
        text = confirm.cleaned_data["csv_text"]
        try:
            outcome, plan = roster_confirm(
                course=course, text=text, digest=confirm.cleaned_data["digest"], keep=keep, actor=request.user
            )
        except ValidationError as error:
            outcome, plan = "", roster_plan(text, roster_current(course=course), keep=keep)
            messages.error(request, " ".join(error.messages))
        if outcome == "applied":
            messages.success(
                request,
                f"Roster applied: {len(plan.adds)} added, "
                f"{len(plan.role_changes)} role changes, {len(plan.drops)} dropped.",
            )
            return redirect("courses:course-detail", slug=course.slug)
        if outcome == "in place":
            messages.info(request, "The course's roster already matches this file: nothing to change.")
            return redirect("courses:course-detail", slug=course.slug)
        if outcome == "changed":
            messages.error(request, "The roster or the course changed since the preview. Check this preview again.")
    elif confirming:
        messages.error(request, "The roster or the course changed since the preview. Upload the roster again.")
    elif request.method == "POST" and form.is_valid():
        text = form.cleaned_data["roster"]
        plan = roster_plan(text, roster_current(course=course), keep=keep)
    confirm = RosterConfirmForm(initial={"csv_text": text, "digest": plan.digest()}) if plan and plan.ok else None
    context = {"course": course, "form": form, "plan": plan, "confirm": confirm}
    return render(request, "courses/roster_import.html", context, status=400 if plan and not plan.ok else 200)
