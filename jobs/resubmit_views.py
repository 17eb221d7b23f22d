"""Edit and resubmit: the assignment's submission form, prefilled from one of the student's attempts.

Retry (jobs.views.job_retry_view) runs an attempt again as it was, with other resources at most. Here the
student changes anything the submission form has (parameters, data set, resources, files), for instance
the smaller batch size a failure explanation or a TA's note asks for. The files of the attempt come along
unless the student unticks them or chooses a replacement of the same name.
"""

from pathlib import Path
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from courses.forms import new_submission_key, submission_key
from jobs.explanations import explain
from jobs.forms import ResubmitForm
from jobs.models import Job
from jobs.selectors import job_get_for_user, job_script_change, job_version_change
from jobs.services import job_enrollment_check, job_resubmit
from jobs.uploads import uploads_forget, uploads_keep, uploads_kept, uploads_merged
from jobs.workdir import staging_dir


@require_http_methods(["GET", "POST"])
@login_required
def job_resubmit_view(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid, owner_action=True)
    job_enrollment_check(user=job.user, course=job.assignment.course)
    staged = _staged_files(job)
    posted = request.method == "POST"
    form = ResubmitForm(
        request.POST if posted else None, request.FILES if posted else None, job=job, kept=[p.name for p in staged]
    )
    token = request.POST.get("upload_token", "")
    key = submission_key(request.POST.get("submission_key", ""))
    if posted:
        valid = form.is_valid()
        new_uploads = form.cleaned_data.get("uploads") or []
        if valid:
            new = _resubmit(request, job, form, staged=staged, token=token, key=key, new_uploads=new_uploads)
            if new is not None:
                messages.success(request, f"Attempt {new.attempt} submitted. This page updates by itself.")
                return redirect("jobs:job-detail", job_uuid=new.uuid)
        if new_uploads or token:
            token = uploads_keep(session=request.session, uploads=new_uploads, token=token)
    context = _context(request, job, form, token=token, key=key or new_submission_key())
    return render(request, "jobs/job_resubmit.html", context, status=400 if posted else 200)


def _resubmit(request, job: Job, form: ResubmitForm, *, staged, token: str, key: str, new_uploads) -> Job | None:
    """The new job, or None with the reason on the form (nothing the student typed or chose is lost)."""
    pending = uploads_kept(session=request.session, token=token)  # chosen in an earlier, refused try
    replaced = {path.name for path in pending}
    keep = set(form.cleaned_data["keep"])
    kept = [path for path in staged if path.name in keep and path.name not in replaced] + pending
    with uploads_merged(kept=kept, new=new_uploads) as uploads:
        if sum(upload.size for upload in uploads) > settings.LABQUEUE_UPLOAD_MAX_BYTES:
            form.add_error("uploads", "With the files kept, the files are over the size limit: untick some.")
            return None
        data = form.cleaned_data
        try:
            new = job_resubmit(
                job=job,
                user=request.user,
                submission_key=key,
                values=data["values"],
                resources=data["resources"],
                dataset=data["dataset"],
                uploads=uploads,
            )
        except ValidationError as error:
            form.add_error(None, error)
            return None
    uploads_forget(session=request.session, token=token)
    return new


def _staged_files(job: Job) -> list[Path]:
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
