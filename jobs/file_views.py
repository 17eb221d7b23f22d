"""A job's output files in the browser (web side): one file downloaded, all of them as a zip made while it is
sent, and each shown in the page ("View" beside "Download"): text and CSV in the page, images through their
own strictly typed endpoint, notebooks rendered read-only and sanitised.

Every read goes through jobs.files (no symlinks, nothing outside the job directory, only the student's own
single-link files, names by files.name_problem as the job page lists them) and is capped; who may look is
decided by job_get_for_user.
"""

import os
from uuid import UUID

from csp.decorators import csp_update
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from jobs import files, previews
from jobs.selectors import job_get_for_user

#: The image endpoint's policy: nothing loads, nothing runs, even if the bytes are opened as a document.
IMAGE_CSP = "default-src 'none'; sandbox"
FILES_PURGED = (
    "This job's files were removed under the portal's retention policy for finished jobs, so there is nothing "
    "to download. Its record and results summary stay on this page."
)


@require_GET
@login_required
def job_file(request: HttpRequest, job_uuid: UUID, path: str) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    try:
        fd = files.open_file(job.workdir, path)
    except files.UnsafePath:
        return _missing(request, job, path)
    return FileResponse(os.fdopen(fd, "rb"), as_attachment=True, filename=os.path.basename(path))


@require_GET
@login_required
def job_zip(request: HttpRequest, job_uuid: UUID) -> HttpResponse:
    """All the job's files in one zip, streamed: the first bytes leave before the last file is read."""
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    if job.files_purged_at is not None:
        messages.error(request, FILES_PURGED)
        return redirect("jobs:job-detail", job_uuid=job.uuid)
    folder = f"{job.assignment.slug}-{str(job.uuid)[:8]}"
    try:
        chunks = files.zip_stream(job.workdir, folder=folder, max_bytes=settings.LABQUEUE_ZIP_MAX_BYTES)
    except files.TooLarge as error:
        messages.error(request, f"{error} Download the files one at a time instead.")
        return redirect("jobs:job-detail", job_uuid=job.uuid)
    response = StreamingHttpResponse(chunks, content_type="application/zip")
    response["Content-Disposition"] = content_disposition_header(True, f"{folder}.zip")
    return response


def _missing(request: HttpRequest, job, path: str) -> HttpResponse:
    context = {"job": job, "path": path, "problem": files.name_problem(path)}
    return render(request, "jobs/job_file_missing.html", context, status=404)


@require_GET
@login_required
@csp_update({"img-src": ["data:"]})  # a notebook's plots are data: images inside the sanitised HTML
def job_file_view(request: HttpRequest, job_uuid: UUID, path: str) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    kind = previews.file_kind(path)
    try:
        contents = _contents(job.workdir, path, kind)
    except files.UnsafePath:
        return _missing(request, job, path)
    context = {"job": job, "path": path, "kind": kind, "text_max": previews.TEXT_MAX_BYTES, **contents}
    return render(request, "jobs/job_file_view.html", context)


def _contents(root: str, path: str, kind: str) -> dict:
    if kind == previews.IMAGE:
        head, size = files.read_head(root, path, previews.MAGIC_BYTES)
        too_large = size > previews.IMAGE_MAX_BYTES
        return {"size": size, "too_large": too_large, "image_ok": previews.image_type(path, head) is not None}
    if kind in (previews.SVG, previews.DOWNLOAD_ONLY):
        return {"size": files.read_head(root, path, 0)[1]}
    context = {}
    if kind == previews.NOTEBOOK:
        data, size = files.read_head(root, path, previews.NOTEBOOK_MAX_BYTES)
        if size > previews.NOTEBOOK_MAX_BYTES:
            context["notebook_error"] = f"it is over {previews.NOTEBOOK_MAX_BYTES // (1024 * 1024)} MB"
        else:
            try:
                html, cells = previews.notebook_html(data)
            except previews.NotebookError as error:
                context["notebook_error"] = str(error)
            else:
                # Sanitised by nbconvert's SanitizeHTML and then nh3 over the whole body (jobs.previews).
                context.update(notebook=mark_safe(html), cells=cells, cells_max=previews.NOTEBOOK_MAX_CELLS)
                return {"size": size, **context}
    data, size = files.read_head(root, path, previews.TEXT_MAX_BYTES)
    text = previews.as_text(data)
    context.update(size=size, text=text, cut=size > previews.TEXT_MAX_BYTES)
    if kind == previews.CSV:
        context["table"] = previews.csv_table(text)
    return context


@require_GET
@login_required
def job_file_image(request: HttpRequest, job_uuid: UUID, path: str) -> HttpResponse:
    """An image's bytes for the view page's <img>: only when the extension and the first bytes agree."""
    job = job_get_for_user(user=request.user, job_uuid=job_uuid)
    if previews.file_kind(path) != previews.IMAGE:
        raise Http404("Only PNG, JPEG, GIF and WebP images are shown inline.")
    try:
        data, size = files.read_head(job.workdir, path, previews.IMAGE_MAX_BYTES)
    except files.UnsafePath:
        raise Http404("No such file in this job's directory.")
    content_type = previews.image_type(path, data)
    if content_type is None or size > previews.IMAGE_MAX_BYTES:
        raise Http404("This file is not an image of the type its name says, or it is too large to show.")
    response = HttpResponse(data, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = IMAGE_CSP  # django-csp leaves a header a view has set
    # files.name_problem let no line break or other control character through to this header.
    response["Content-Disposition"] = content_disposition_header(False, os.path.basename(path))
    return response
