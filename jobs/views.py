import os
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from courses.forms import SubmissionForm
from courses.models import STAFF_ROLES, Role
from courses.selectors import assignment_get, course_get_for_user
from jobs import files
from jobs.explain import status_text
from jobs.models import Status
from jobs.selectors import job_get_for_user, job_list, job_list_for_course
from jobs.services import job_cancel, job_submit


@require_POST
@login_required
def job_create(request: HttpRequest, slug: str, assignment_slug: str) -> HttpResponse:
    course, role = course_get_for_user(user=request.user, slug=slug)
    assignment = assignment_get(course=course, slug=assignment_slug)
    form = SubmissionForm(request.POST, request.FILES, assignment=assignment)
    if form.is_valid():
        data = form.cleaned_data
        try:
            job = job_submit(
                user=request.user, assignment=assignment, values=data["values"], resources=data["resources"],
                dataset=data["dataset"], uploads=data["uploads"],
            )  # fmt: skip
        except ValidationError as error:
            form.add_error(None, error)
        else:
            messages.success(request, "Job submitted. This page updates by itself.")
            return redirect("jobs:job-detail", job_uuid=job.uuid)
    context = {"course": course, "role": role, "assignment": assignment, "form": form, "can_edit": role == Role.INSTRUCTOR}
    return render(request, "courses/assignment_detail.html", context, status=400)


@require_GET
@login_required
def job_list_view(request: HttpRequest) -> HttpResponse:
    course_slug = request.GET.get("course", "")
    jobs = job_list(user=request.user, course_slug=course_slug)[:200]
    courses = {e.course.slug: e.course for e in request.user.enrollments.select_related("course")}
    context = {"jobs": jobs, "courses": courses.values(), "course_slug": course_slug}
    return render(request, "jobs/job_list.html", context)


@require_GET
@login_required
def course_jobs(request: HttpRequest, slug: str) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    status = request.GET.get("status", "")
    jobs = job_list_for_course(course=course, status=status if status in Status.values else "")[:500]
    context = {"course": course, "jobs": jobs, "status": status, "statuses": Status.choices}
    return render(request, "jobs/course_jobs.html", context)


def _detail_context(request: HttpRequest, job) -> dict:
    limit = settings.LABQUEUE_LOG_TAIL_BYTES
    stdout, stdout_cut = files.tail(job.workdir, job.stdout_name, limit)
    stderr, stderr_cut = files.tail(job.workdir, job.stderr_name, limit)
    return {
        "job": job,
        "status_text": status_text(job),
        "is_owner": job.user_id == request.user.pk,
        "stdout": stdout,
        "stdout_cut": stdout_cut,
        "stderr": stderr,
        "stderr_cut": stderr_cut,
        "files": files.list_files(job.workdir) if job.submitted_at else [],
        "events": job.events.select_related("actor"),
        "poll": not job.is_terminal,
    }


@require_GET
@login_required
def job_detail(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    return render(request, "jobs/job_detail.html", _detail_context(request, job))


@require_GET
@login_required
def job_status(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    """The live part of the job page, polled by htmx while the job is not finished."""
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    return render(request, "jobs/_job_live.html", _detail_context(request, job))


@require_POST
@login_required
def job_cancel_view(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid, owner_action=True)
    try:
        job_cancel(job=job, actor=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "Cancel requested. The job stops within a few seconds.")
    return redirect("jobs:job-detail", job_uuid=job.uuid)


@require_GET
@login_required
def job_file(request: HttpRequest, job_uuid: UUID, path: str) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    try:
        fd = files.open_file(job.workdir, path)
    except files.UnsafePath:
        raise Http404("No such file in this job's directory.")
    return FileResponse(os.fdopen(fd, "rb"), as_attachment=True, filename=os.path.basename(path))


@require_GET
@login_required
def job_zip(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    folder = f"{job.assignment.slug}-{str(job.uuid)[:8]}"
    try:
        archive = files.build_zip(job.workdir, folder=folder, max_bytes=settings.LABQUEUE_ZIP_MAX_BYTES)
    except files.TooLarge as error:
        messages.error(request, f"{error} Download the files one at a time instead.")
        return redirect("jobs:job-detail", job_uuid=job.uuid)
    return FileResponse(archive, as_attachment=True, filename=f"{folder}.zip", content_type="application/zip")
