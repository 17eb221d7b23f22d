from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from courses.forms import AssignmentForm, SubmissionForm
from courses.models import STAFF_ROLES, Assignment, Role
from courses.scripting import Resources, default_values, render_script
from courses.selectors import assignment_get, assignment_list, course_get_for_user, enrollment_list
from courses.services import assignment_save


def _preview(assignment) -> str:
    dataset = assignment.datasets.first() if assignment.pk else None
    return render_script(
        body=assignment.script_template,
        values=default_values(assignment.parameters),
        resources=Resources(**assignment.default_resources),
        dataset_path=dataset.path if dataset else "",
        label=f"{assignment.course.code}: {assignment.title}",
    )


@require_GET
@login_required
def course_list(request: HttpRequest) -> HttpResponse:
    return render(request, "courses/course_list.html", {"enrollments": enrollment_list(user=request.user)})


@require_GET
@login_required
def course_detail(request: HttpRequest, slug: str) -> HttpResponse:
    course, role = course_get_for_user(user=request.user, slug=slug)
    context = {"course": course, "role": role, "assignments": assignment_list(course=course)}
    return render(request, "courses/course_detail.html", {**context, "is_course_staff": role in STAFF_ROLES})


@require_GET
@login_required
def assignment_detail(request: HttpRequest, slug: str, assignment_slug: str) -> HttpResponse:
    course, role = course_get_for_user(user=request.user, slug=slug)
    assignment = assignment_get(course=course, slug=assignment_slug)
    context = {
        "course": course,
        "role": role,
        "assignment": assignment,
        "form": SubmissionForm(assignment=assignment),
        "preview": _preview(assignment) if role in STAFF_ROLES else "",
        "can_edit": role == Role.INSTRUCTOR,
    }
    return render(request, "courses/assignment_detail.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def assignment_edit(request: HttpRequest, slug: str, assignment_slug: str | None = None) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    assignment = assignment_get(course=course, slug=assignment_slug) if assignment_slug else None
    instance = assignment or Assignment(course=course)
    form = AssignmentForm(request.POST or None, request.FILES or None, course=course, instance=instance)
    preview = ""
    if request.method == "POST" and form.is_valid():
        fields = {k: v for k, v in form.cleaned_data.items() if k not in ("datasets", "starter_file")}
        if "preview" in request.POST:
            preview = _preview(form.save(commit=False))
        else:
            saved = assignment_save(
                course=course,
                fields=fields,
                datasets=list(form.cleaned_data["datasets"]),
                assignment=assignment,
                starter_file=form.cleaned_data.get("starter_file"),
            )
            messages.success(request, f"Saved “{saved.title}”. This is the script students' jobs will run.")
            return redirect("courses:assignment-detail", slug=course.slug, assignment_slug=saved.slug)
    context = {"course": course, "form": form, "assignment": assignment, "preview": preview}
    return render(request, "courses/assignment_form.html", context)
