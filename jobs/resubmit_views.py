"""Edit and resubmit: the assignment's submission form, prefilled from one of the student's attempts.

Retry (jobs.views.job_retry_view) runs an attempt again as it was, with other resources at most. Here the
student changes anything the submission form has (parameters, data set, resources, files), for instance
the smaller batch size a failure explanation or a TA's note asks for. The files of the attempt come along
unless the student unticks them or chooses a replacement of the same name.
"""

from pathlib import Path
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from jobs.explanations import explain
from jobs.forms import ResubmitForm, new_submission_key, resources_from_query, submission_key
from jobs.models import Job
from jobs.selectors import job_get_for_user, job_script_change, job_version_change
from jobs.services import job_enrollment_check, job_resubmit
from jobs.staging import staging_dir
from jobs.uploads import uploads_kept, uploads_send


@require_http_methods(["GET", "POST"])
@login_required
def job_resubmit_view(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid, owner_action=True)
    job_enrollment_check(user=job.user, course=job.assignment.course)
    staged = staged_files(job)
    posted = request.method == "POST"
    # A link may prefill other resources: "Resubmit with these resources" (jobs.efficiency).
    suggested = resources_from_query(request.GET, course=job.assignment.course)
    form = ResubmitForm(
        request.POST if posted else None,
        request.FILES if posted else None,
        job=job,
        kept=[p.name for p in staged],
        resources=suggested,
    )
    token = request.POST.get("upload_token", "")
    key = submission_key(request.POST.get("submission_key", ""))
    if posted:
        new, token = uploads_send(
            session=request.session,
            form=form,
            token=token,
            kept=_kept_files(request, form, staged=staged, token=token),
            too_large="With the files kept, the files are over the size limit: untick some.",
            send=lambda uploads: job_resubmit(
                job=job, user=request.user, submission_key=key, uploads=uploads, **form.job_request()
            ),
        )
        if new is not None:
            messages.success(request, f"Attempt {new.attempt} submitted. This page updates by itself.")
            return redirect("jobs:job-detail", job_uuid=new.uuid)
    context = _context(request, job, form, token=token, key=key or new_submission_key()) | {"suggested": suggested}
    return render(request, "jobs/job_resubmit.html", context, status=400 if posted else 200)


def _kept_files(request, form: ResubmitForm, *, staged: list[Path], token: str) -> list[Path]:
    """The attempt's files the student left ticked, and those chosen on an earlier refused try (which win
    over the attempt's file of the same name)."""
    pending = uploads_kept(session=request.session, token=token)
    replaced = {path.name for path in pending}
    keep = set(form.cleaned_data.get("keep") or []) if form.is_valid() else set()
    return [path for path in staged if path.name in keep and path.name not in replaced] + pending


def staged_files(job: Job) -> list[Path]:
    """The files uploaded for the attempt (none once removed under the retention policy or by a cancel)."""
    folder = staging_dir(str(job.uuid))
    if not folder.is_dir():
        return []
    return [path for path in sorted(folder.iterdir()) if path.is_file() and not path.is_symlink()]


def _context(request: HttpRequest, job: Job, form: ResubmitForm, *, token: str, key: str) -> dict:
    assignment = job.assignment
    return {
        "job": job,
        "course": assignment.course,
        "assignment": assignment,
        "form": form,
        "submission_key": key,
        "upload_token": token,
        "pending_uploads": [path.name for path in uploads_kept(session=request.session, token=token)],
        "explanation": explain(job) if job.is_terminal else None,
        "notes": job.notes.select_related("author"),
        "script_change": job_script_change(job=job),
        "version_change": job_version_change(job=job),
        "attempts_used": Job.objects.filter(user=job.user, assignment=assignment).count(),
    }
