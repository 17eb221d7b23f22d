import re
import sys
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import get_conditional_response, patch_cache_control
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from courses.models import STAFF_ROLES, Role
from courses.selectors import (
    assignment_get,
    assignment_preview,
    assignment_versions,
    course_get_for_user,
    lab_session_next,
)
from jobs import files
from jobs.efficiency import job_use, job_use_awaited
from jobs.explanations import explain, hint_messages, status_text
from jobs.forms import NoteForm, RetryForm, SubmissionForm, new_submission_key, submission_key
from jobs.live import job_live_etag, job_out_of_date
from jobs.models import Job
from jobs.selectors import (
    job_attempts,
    job_get_for_user,
    job_script_change,
    job_starter_files,
    job_version_change,
)
from jobs.services import (
    NotEnrolled,
    job_cancel,
    job_enrollment_check,
    job_note_add,
    job_retry,
    job_review,
    job_submit,
    retry_suggestion,
)
from jobs.sessions import session_context
from jobs.uploads import uploads_kept, uploads_send

LOG_PAGE_BYTES = 64 * 1024
PAGE_RE = re.compile(r"[0-9]+")


@require_http_methods(["GET", "POST"])
@login_required
def job_request(request: HttpRequest, slug: str, assignment_slug: str) -> HttpResponse:
    """The assignment page and the job request it sends: GET shows the submission form, POST submits it. A
    refused request shows the same page (400) with what was typed, the files kept and why."""
    posted = request.method == "POST"
    course, role = _course_for_submit(request, slug) if posted else course_get_for_user(user=request.user, slug=slug)
    assignment = assignment_get(course=course, slug=assignment_slug)
    form = SubmissionForm(request.POST if posted else None, request.FILES if posted else None, assignment=assignment)
    token = request.POST.get("upload_token", "")
    key = submission_key(request.POST.get("submission_key", ""))
    if posted:
        job, token = uploads_send(
            session=request.session,
            form=form,
            token=token,
            kept=uploads_kept(session=request.session, token=token),
            too_large="With the files kept from your last try, the files are over the size limit.",
            send=lambda uploads: job_submit(
                user=request.user, submission_key=key, assignment=assignment, uploads=uploads, **form.job_request()
            ),
        )
        if job is not None:
            messages.success(request, "Job submitted. This page updates by itself.")
            return redirect("jobs:job-detail", job_uuid=job.uuid)
    context = job_request_context(request, assignment=assignment, role=role, form=form, token=token, key=key)
    return render(request, "courses/assignment_detail.html", context, status=400 if posted else 200)


def job_request_context(request: HttpRequest, *, assignment, role: str, form, token: str, key: str) -> dict:
    """What the assignment page shows, the same whether it is shown first or after a refused request."""
    course = assignment.course
    context = {
        "course": course,
        "role": role,
        "assignment": assignment,
        "form": form,
        "submission_key": key or new_submission_key(),
        "upload_token": token,
        "kept_uploads": [path.name for path in uploads_kept(session=request.session, token=token)],
        "can_edit": role == Role.INSTRUCTOR,
        "next_lab": lab_session_next(course=course),
        "preview": assignment_preview(assignment=assignment) if role in STAFF_ROLES else "",
    }
    if role in STAFF_ROLES:
        context.update(assignment_versions(assignment=assignment))
    return context


def _course_for_submit(request: HttpRequest, slug: str):
    """The course and role of someone submitting in it. Someone dropped from it (who has jobs there) is told so
    with a 403 page rather than a bare 404; anyone else outside it gets 404 as on every course page."""
    try:
        return course_get_for_user(user=request.user, slug=slug)
    except Http404:
        if Job.objects.filter(user=request.user, assignment__course__slug=slug).exists():
            raise NotEnrolled(
                "You are no longer enrolled in this course, so you cannot submit jobs in it. Your earlier jobs "
                "and their files stay readable under My jobs. If this is a mistake, ask the course's instructor "
                "to add you to the roster again."
            )
        raise


def _detail_context(request: HttpRequest, job: Job) -> dict:
    limit = settings.LABQUEUE_LOG_TAIL_BYTES
    with_files = bool(job.submitted_at) and job.files_purged_at is None  # removed: jobs.retention
    stdout, stdout_cut = files.tail(job.workdir, job.stdout_name, limit) if with_files else ("", False)
    stderr, stderr_cut = files.tail(job.workdir, job.stderr_name, limit) if with_files else ("", False)
    lines = (stdout + "\n" + stderr).splitlines()
    explanation = explain(job, lines)
    is_owner = job.user_id == request.user.pk
    return {
        **session_context(job, is_owner=is_owner),
        "job": job,
        "status_text": status_text(job),
        "explanation": explanation,
        "hints": hint_messages(job, lines) if job.is_terminal else [],
        "is_owner": is_owner,
        "is_staff_viewer": not is_owner,
        "stdout": stdout,
        "stdout_cut": stdout_cut,
        "stderr": stderr,
        "stderr_cut": stderr_cut,
        "files": files.list_files(job.workdir) if with_files else [],
        "files_unreadable": with_files and files.unreadable(job.workdir),
        "files_purged": job.files_purged_at is not None,
        "events": job.events.select_related("actor"),
        "notes": job.notes.select_related("author"),
        "attempts": job_attempts(job=job),
        "retried_by": Job.objects.filter(retry_of=job).first(),
        "poll": not job.is_terminal,
        "poll_seconds": settings.LABQUEUE_POLL_SECONDS,
        "out_of_date": job_out_of_date(job),
    }


@require_GET
@login_required
def job_detail(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    etag = job_live_etag(job=job, viewer=request.user)  # before the logs are read: see jobs.live
    context = {**_detail_context(request, job), "etag": etag}
    context["note_form"] = NoteForm()
    context["script_change"] = job_script_change(job=job)
    context["version_change"] = job_version_change(job=job)
    context["starter_files"] = job_starter_files(job=job)
    context["job_use"] = job_use(job)
    context["job_use_awaited"] = job_use_awaited(job)
    return render(request, "jobs/job_detail.html", context)


@require_GET
@login_required
def job_status(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    """The live part of the job page, polled by htmx while the job is not finished: 304 Not Modified when the
    poll's If-None-Match is what the page would show now (jobs.live), which reads none of the job's files;
    otherwise every part, each swapped in only if it changed (templates/jobs/_job_live.html).

    The access check comes first, so someone else's job is a 404 whatever ETag they send. (Django's
    @condition would compute the ETag before the view, so before the check.)"""
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    etag = job_live_etag(job=job, viewer=request.user)
    response = get_conditional_response(request, etag=etag)
    if response is None:
        context = {**_detail_context(request, job), "etag": etag, "oob": True}
        response = render(request, "jobs/_job_live.html", context)
    if etag:
        response["ETag"] = etag
    patch_cache_control(response, private=True, no_cache=True)
    return response


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


@require_http_methods(["GET", "POST"])
@login_required
def job_retry_view(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    """Retry as before (POST without resources) or with changed resources (the form)."""
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    job_enrollment_check(user=job.user, course=job.assignment.course, actor=request.user)
    explanation = explain(job)
    suggested = retry_suggestion(job=job, suggest=explanation.suggest if explanation else {})
    form = RetryForm(request.POST or None, job=job, initial=suggested.as_dict())
    if request.method == "POST" and ("same" in request.POST or form.is_valid()):
        resources = None if "same" in request.POST else form.cleaned_data["resources"]
        try:
            new = job_retry(job=job, actor=request.user, resources=resources)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
            return redirect("jobs:job-detail", job_uuid=job.uuid)
        messages.success(request, f"Attempt {new.attempt} submitted.")
        return redirect("jobs:job-detail", job_uuid=new.uuid)
    context = {"job": job, "form": form, "explanation": explanation}
    return render(request, "jobs/job_retry.html", context, status=400 if form.errors else 200)


@require_POST
@login_required
def job_note_create(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid, staff_action=True)
    form = NoteForm(request.POST)
    if form.is_valid():
        job_note_add(job=job, author=request.user, text=form.cleaned_data["text"])
        messages.success(request, "Note added; the student sees it on this page.")
    else:
        messages.error(request, "The note is empty or too long (4000 characters at most).")
    return redirect("jobs:job-detail", job_uuid=job.uuid)


@require_POST
@login_required
def job_review_view(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid, staff_action=True)
    job_review(job=job, reviewer=request.user)
    messages.success(request, "Marked as reviewed.")
    return redirect("jobs:job-detail", job_uuid=job.uuid)


@require_GET
@login_required
def job_log(request: HttpRequest, job_uuid: UUID, stream: str) -> HttpResponse:
    """The whole stdout or stderr, one page (64 KB) at a time."""
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    name = {"out": job.stdout_name, "err": job.stderr_name}.get(stream)
    if name is None:
        raise Http404("No such log.")
    text, total, page = files.read_page(
        job.workdir, name, page=_page_number(request.GET.get("page", "1")), page_size=LOG_PAGE_BYTES
    )
    pages = max(1, -(-total // LOG_PAGE_BYTES))
    context = {"job": job, "name": name, "stream": stream, "text": text, "page": page, "pages": pages}
    context["files_purged"] = job.files_purged_at is not None
    return render(request, "jobs/job_log.html", context)


def _page_number(raw: str) -> int:
    """A ?page= value: digits only (past the last page reads the last page), anything else is not a page."""
    page = (int(raw) if len(raw) <= 18 else sys.maxsize) if PAGE_RE.fullmatch(raw) else 0
    if page < 1:
        raise Http404("No such page.")
    return page


@require_GET
def retry_help(request: HttpRequest) -> HttpResponse:
    return render(request, "jobs/retry_help.html")
