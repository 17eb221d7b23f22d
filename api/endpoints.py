"""The API for scripts, /api/v1/ (web side): my courses and their assignments, jobs (list, submit, cancel,
retry, resubmit), a job's files and zip, the gradebook, the course usage report. Each operation goes through the same
selectors, forms and services as the pages, so it says and refuses the same; none calls Slurm (a submitted job
is sent by the worker once the transaction commits, as from the form). Who may do what: api.auth; errors:
api.problems."""

import csv
import io
import os
from datetime import date, datetime
from typing import Annotated
from uuid import UUID

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils import timezone
from django.utils.http import content_disposition_header
from ninja import NinjaAPI, Query, Schema, Status
from ninja.errors import HttpError
from pydantic import StringConstraints

from api import problems
from api.auth import Caller, SessionCsrfAuth, TokenAuth
from api.models import Scope
from api.pagination import MAX_LIMIT, page
from courses.models import STAFF_ROLES, Enrollment
from courses.selectors import assignment_get, assignment_list, course_get_for_user
from jobs import files
from jobs.explanations import status_label
from jobs.file_views import FILES_PURGED
from jobs.forms import ResubmitForm, RetryForm, SubmissionForm, submission_key
from jobs.gradebook import CSV_HEADER, gradebook_rows
from jobs.models import Job
from jobs.resubmit_views import staged_files
from jobs.selectors import LIST_FIELDS, job_get_for_user, job_list, job_list_for_course
from jobs.services import job_cancel, job_enrollment_check, job_resubmit, job_retry, job_submit
from jobs.uploads import uploads_merged
from portal.spreadsheet import spreadsheet_safe
from reports.course_report import course_report_cached
from reports.forms import course_default_first, range_from_request

ERRORS = frozenset({400, 401, 403, 404, 409, 410, 422, 429})


class ProblemAPI(NinjaAPI):
    def get_openapi_schema(self, *args, **kwargs) -> dict:
        """ninja documents every response as application/json: errors are problem documents (api.problems)."""
        schema = super().get_openapi_schema(*args, **kwargs)
        for operations in schema["paths"].values():
            for operation in operations.values():
                responses = operation.get("responses", {})
                for status, response in responses.items():
                    if int(status) >= 400 and "application/json" in response.get("content", {}):
                        response["content"] = {problems.MEDIA_TYPE: response["content"].pop("application/json")}
                operation["responses"] = {str(status): response for status, response in responses.items()}
        return schema


api = ProblemAPI(
    title="LabQueue API",
    version="1",
    description="Scripts' way into LabQueue: README, 'An API for scripts'. Errors are RFC 9457 problem documents.",
    urls_namespace="api:v1",
    auth=[TokenAuth(), SessionCsrfAuth()],
)
problems.install(api)


def _errors(*codes: int) -> dict:
    """The problem documents an operation may answer: 401 and 429 anywhere, 422 for a malformed request."""
    return {code: problems.Problem for code in (401, 422, 429, *codes)}


#: A course's or assignment's short name, as in the pages' addresses (<slug:...>).
Slug = Annotated[str, StringConstraints(pattern=r"^[-a-zA-Z0-9_]+$", max_length=50)]


class PageQuery(Schema):
    cursor: str = ""
    limit: int = 50


def _limit(query: PageQuery) -> int:
    if not 1 <= query.limit <= MAX_LIMIT:
        raise HttpError(400, f"limit is a number from 1 to {MAX_LIMIT}.")
    return query.limit


# --- courses and assignments ---


class CourseOut(Schema):
    slug: str
    code: str
    title: str
    term: str
    role: str


class CoursePage(Schema):
    items: list[CourseOut]
    next_cursor: str | None


@api.get("/courses", response={200: CoursePage, **_errors(400, 403)}, summary="My courses")
def courses(request: HttpRequest, query: Query[PageQuery]):
    caller = Caller.of(request)
    caller.require(Scope.READ_COURSES)
    rows = Enrollment.objects.filter(user=caller.user).select_related("course")
    if caller.token is not None and caller.token.course_id is not None:
        rows = rows.filter(course_id=caller.token.course_id)
    enrollments, cursor = page(rows, cursor=query.cursor, limit=_limit(query))
    items = [{**_course(e.course), "role": e.role} for e in enrollments]
    return {"items": items, "next_cursor": cursor}


def _course(course) -> dict:
    return {"slug": course.slug, "code": course.code, "title": course.title, "term": course.term}


class AssignmentOut(Schema):
    slug: str
    title: str
    description: str
    parameters: list[dict]
    gpus: int
    cpus: int
    mem_mb: int
    minutes: int
    max_attempts: int | None
    opens_at: datetime | None
    due_at: datetime | None


class AssignmentPage(Schema):
    items: list[AssignmentOut]
    next_cursor: str | None


@api.get("/courses/{slug}/assignments", response={200: AssignmentPage, **_errors(400, 403, 404)}, summary="A course's")
def assignments(request: HttpRequest, slug: Slug, query: Query[PageQuery]):
    caller = Caller.of(request)
    caller.require_course(Scope.READ_COURSES, slug)
    course, _ = course_get_for_user(user=caller.user, slug=slug)
    rows, cursor = page(assignment_list(course=course), cursor=query.cursor, limit=_limit(query))
    return {"items": rows, "next_cursor": cursor}


# --- jobs ---


class JobOut(Schema):
    uuid: UUID
    course: str
    assignment: str
    student: str
    status: str
    label: str
    slurm_job_id: str
    attempt: int
    late: bool
    gpus: int
    cpus: int
    mem_mb: int
    minutes: int
    created_at: datetime
    submitted_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    exit_code: int | None = None
    terminal: bool


class JobPage(Schema):
    items: list[JobOut]
    next_cursor: str | None


#: What _job reads: the pages' list columns (jobs.selectors.LIST_FIELDS) and the rest, loaded with the rows of a
#: list instead of one query per row and field.
JOB_OUT_FIELDS = (
    *LIST_FIELDS,
    *("gpus", "cpus", "mem_mb", "minutes", "submitted_at", "started_at", "ended_at", "exit_code"),
    "left_queue_at",  # the status label's two
    "message",
)


def _job(job: Job) -> dict:
    return {
        "uuid": job.uuid,
        "course": job.assignment.course.slug,
        "assignment": job.assignment.slug,
        "student": job.run_as,
        "status": job.status,
        "label": str(status_label(job)[1]),
        "slurm_job_id": job.slurm_job_id,
        "attempt": job.attempt,
        "late": job.late,
        "gpus": job.gpus,
        "cpus": job.cpus,
        "mem_mb": job.mem_mb,
        "minutes": job.minutes,
        "created_at": job.created_at,
        "submitted_at": job.submitted_at,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "exit_code": job.exit_code,
        "terminal": job.is_terminal,
    }


class JobListQuery(PageQuery):
    course: Slug | None = None


@api.get("/jobs", response={200: JobPage, **_errors(400, 403, 404)}, summary="My jobs, or a course's (staff)")
def jobs(request: HttpRequest, query: Query[JobListQuery]):
    """My jobs, newest first; with ?course=<slug>, every job of that course for its TAs and instructors."""
    caller = Caller.of(request)
    caller.require(Scope.READ_JOBS)
    if query.course:
        caller.require_course(Scope.READ_JOBS, query.course, staff=True)
        course, _ = course_get_for_user(user=caller.user, slug=query.course, roles=STAFF_ROLES)
        rows = job_list_for_course(course=course)
    else:
        rows = job_list(user=caller.user)
        if caller.token is not None and caller.token.course is not None:
            rows = rows.filter(assignment__course=caller.token.course)
    listed, cursor = page(rows.only(*JOB_OUT_FIELDS), cursor=query.cursor, limit=_limit(query))
    return {"items": [_job(job) for job in listed], "next_cursor": cursor}


def _job_for(caller: Caller, scope: str, job_uuid: UUID, **access) -> Job:
    """The job if the caller may see it (jobs.selectors.job_get_for_user: someone else's is a 404), within the
    token's course."""
    caller.require(scope)
    job = job_get_for_user(user=caller.user, job_uuid=job_uuid, **access)
    if not caller.reaches(job.assignment.course.slug):
        raise Http404("No such job.")
    return job


@api.get("/jobs/{job_uuid}", response={200: JobOut, **_errors(403, 404)}, summary="One job")
def job(request: HttpRequest, job_uuid: UUID):
    return _job(_job_for(Caller.of(request), Scope.READ_JOBS, job_uuid))


class JobRequest(Schema):
    """The assignment page's form as JSON: the same fields, checks and messages (jobs.forms.SubmissionForm).
    Resources left out are the assignment's defaults; `submission_key` (32 hex digits, any you make) makes
    the same request sent twice give one job."""

    parameters: dict[str, str | int | float | bool] = {}
    gpus: int | None = None
    cpus: int | None = None
    mem_mb: int | None = None
    minutes: int | None = None
    dataset: str | None = None
    submission_key: str = ""


def _form_value(value) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@api.post(
    "/courses/{slug}/assignments/{assignment_slug}/jobs",
    response={201: JobOut, **_errors(403, 404, 422)},
    summary="Submit a job",
)
def job_create(request: HttpRequest, slug: Slug, assignment_slug: Slug, body: JobRequest):
    caller = Caller.of(request)
    caller.require_course(Scope.JOBS_SUBMIT, slug)
    course, _ = course_get_for_user(user=caller.user, slug=slug)
    assignment = assignment_get(course=course, slug=assignment_slug)
    form = SubmissionForm(_form_data(body, assignment), assignment=assignment)
    _valid(form)
    key = submission_key(body.submission_key)
    created = job_submit(user=caller.user, submission_key=key, assignment=assignment, **form.job_request())
    return Status(201, _job(created))


def _form_data(body: JobRequest, assignment, *, parameters: dict | None = None, resources=None, dataset=None) -> dict:
    """The form as the page would post it: what the body gives, else the page's prefilled values (the
    assignment's defaults; for a resubmission, the earlier attempt's `parameters`, `resources` and `dataset`)."""
    defaults = {spec["name"]: spec["default"] for spec in assignment.parameters if "default" in spec}
    values = {**defaults, **(parameters or {}), **body.parameters}
    data = {f"param_{name}": _form_value(value) for name, value in values.items()}
    asked = {"gpus": body.gpus, "cpus": body.cpus, "mem_mb": body.mem_mb, "minutes": body.minutes}
    prefilled = resources or assignment.default_resources
    data.update({name: prefilled[name] if value is None else value for name, value in asked.items()})
    if body.dataset is not None or dataset is not None:
        data["dataset"] = body.dataset if body.dataset is not None else dataset
    return data


def _valid(form) -> None:
    """A refused form as a 422 problem: every message in `detail`, and per field in `errors`."""
    if form.is_valid():
        return
    errors = {_field(name): [str(m) for m in messages] for name, messages in form.errors.items()}
    raise problems.FormRefused(errors)


def _field(name: str) -> str:
    if name == "__all__":
        return "request"
    return f"parameters.{name.removeprefix('param_')}" if name.startswith("param_") else name


@api.post("/jobs/{job_uuid}/cancel", response={200: JobOut, **_errors(403, 404, 422)}, summary="Cancel a job")
def cancel(request: HttpRequest, job_uuid: UUID):
    caller = Caller.of(request)
    found = _job_for(caller, Scope.JOBS_CANCEL, job_uuid, owner_action=True)
    job_cancel(job=found, actor=caller.user)
    found.refresh_from_db()
    return _job(found)


class RetryRequest(Schema):
    """Resources for the new attempt; none given: the same as the attempt retried."""

    gpus: int | None = None
    cpus: int | None = None
    mem_mb: int | None = None
    minutes: int | None = None


@api.post("/jobs/{job_uuid}/retry", response={201: JobOut, **_errors(403, 404, 422)}, summary="Retry a job")
def retry(request: HttpRequest, job_uuid: UUID, body: RetryRequest | None = None):
    caller = Caller.of(request)
    found = _job_for(caller, Scope.JOBS_SUBMIT, job_uuid)
    asked = {name: value for name, value in (body.dict() if body else {}).items() if value is not None}
    resources = None
    if asked:
        form = RetryForm({**found.resources, **asked}, job=found)
        _valid(form)
        resources = form.cleaned_data["resources"]
    return Status(201, _job(job_retry(job=found, actor=caller.user, resources=resources)))


class ResubmitRequest(JobRequest):
    """The edit-and-resubmit page's form as JSON. What the body leaves out is the earlier attempt's (its
    parameters, resources and data set, as the page prefills them). The attempt's uploaded files all come along,
    as the page's boxes start ticked; `keep` names the ones to send when not all ([]: none). New files cannot be
    sent through the API."""

    keep: list[str] | None = None


RESUBMIT_TOO_LARGE = "With the files kept, the files are over the size limit: leave some out with keep."


@api.post(
    "/jobs/{job_uuid}/resubmit", response={201: JobOut, **_errors(403, 404, 422)}, summary="Edit and resubmit a job"
)
def resubmit(request: HttpRequest, job_uuid: UUID, body: ResubmitRequest):
    caller = Caller.of(request)
    found = _job_for(caller, Scope.JOBS_SUBMIT, job_uuid, owner_action=True)
    job_enrollment_check(user=found.user, course=found.assignment.course)
    staged = staged_files(found)
    names = [path.name for path in staged]
    dataset = str(found.dataset_id) if found.dataset_id else None
    data = _form_data(body, found.assignment, parameters=found.parameters, resources=found.resources, dataset=dataset)
    form = ResubmitForm(data | {"keep": names if body.keep is None else body.keep}, job=found, kept=names)
    _valid(form)
    kept = [path for path in staged if path.name in set(form.cleaned_data["keep"])]
    with uploads_merged(kept=kept, new=[]) as uploads:
        if sum(upload.size for upload in uploads) > settings.LABQUEUE_UPLOAD_MAX_BYTES:
            raise problems.FormRefused({"keep": [RESUBMIT_TOO_LARGE]})
        key = submission_key(body.submission_key)
        created = job_resubmit(job=found, user=caller.user, submission_key=key, uploads=uploads, **form.job_request())
    return Status(201, _job(created))


# --- a job's files ---


class FileOut(Schema):
    path: str
    size: int
    offered: bool
    problem: str | None


@api.get("/jobs/{job_uuid}/files", response={200: list[FileOut], **_errors(403, 404)}, summary="A job's files")
def job_files(request: HttpRequest, job_uuid: UUID):
    found = _job_for(Caller.of(request), Scope.READ_FILES, job_uuid)
    if not found.submitted_at or found.files_purged_at is not None:
        return []
    listed = files.list_files(found.workdir)
    return [{"path": f.shown_path, "size": f.size, "offered": f.linkable, "problem": f.problem} for f in listed]


BINARY = {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}


@api.get(
    "/jobs/{job_uuid}/files/{path:path}",
    response={200: None, **_errors(403, 404)},
    openapi_extra={"responses": {200: {"description": "The file's bytes", **BINARY}}},
    summary="Download one file",
)
def job_file(request: HttpRequest, job_uuid: UUID, path: str):
    found = _job_for(Caller.of(request), Scope.READ_FILES, job_uuid)
    problem = files.name_problem(path)
    try:
        if problem:
            raise files.UnsafePath(path)
        fd = files.open_file(found.workdir, path)
    except files.UnsafePath:
        raise Http404(f"No file {path!r} in this job's directory" + (f": {problem}." if problem else "."))
    response = FileResponse(os.fdopen(fd, "rb"), as_attachment=True, filename=os.path.basename(path))
    response["Content-Type"] = "application/octet-stream"
    return response


@api.get(
    "/jobs/{job_uuid}/zip",
    response={200: None, **_errors(403, 404, 409, 410)},
    openapi_extra={
        "responses": {
            200: {
                "description": "All the job's files, zipped while sent",
                "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
            }
        }
    },
    summary="Download all files as a zip",
)
def job_zip(request: HttpRequest, job_uuid: UUID):
    found = _job_for(Caller.of(request), Scope.READ_FILES, job_uuid)
    if found.files_purged_at is not None:
        raise HttpError(410, FILES_PURGED)
    folder = f"{found.assignment.slug}-{str(found.uuid)[:8]}"
    try:
        chunks = files.zip_stream(found.workdir, folder=folder, max_bytes=settings.LABQUEUE_ZIP_MAX_BYTES)
    except files.TooLarge as error:
        raise HttpError(409, f"{error} Download the files one at a time instead.") from error
    response = StreamingHttpResponse(chunks, content_type="application/zip")
    response["Content-Disposition"] = content_disposition_header(True, f"{folder}.zip")
    return response


# --- gradebook ---


class GradeOut(Schema):
    netid: str
    name: str
    attempts: int
    best: str
    best_max: str
    best_job: UUID | None
    last: str
    last_max: str
    last_job: UUID | None
    late: bool


class GradebookQuery(Schema):
    format: str = "json"


@api.get(
    "/courses/{slug}/assignments/{assignment_slug}/gradebook",
    response={200: list[GradeOut], **_errors(403, 404, 422)},
    openapi_extra={
        "responses": {
            200: {
                "description": "The gradebook; ?format=csv: the page's CSV",
                "content": {"text/csv": {"schema": {"type": "string"}}},
            }
        }
    },
    summary="An assignment's gradebook (course staff)",
)
def gradebook(request: HttpRequest, slug: Slug, assignment_slug: Slug, query: Query[GradebookQuery]):
    caller = Caller.of(request)
    caller.require_course(Scope.READ_GRADEBOOK, slug)
    course, _ = course_get_for_user(user=caller.user, slug=slug, roles=STAFF_ROLES)
    assignment = assignment_get(course=course, slug=assignment_slug)
    rows = gradebook_rows(assignment=assignment)
    if query.format == "csv":
        return _gradebook_csv(course, assignment, rows)
    if query.format != "json":
        raise ValidationError("format is json (the default) or csv.")
    return [
        {
            **{name: getattr(row, name) for name in ("netid", "name", "attempts", "best", "best_max", "last")},
            "last_max": row.last_max,
            "late": row.late,
            "best_job": row.best_job.uuid if row.best_job else None,
            "last_job": row.last_job.uuid if row.last_job else None,
        }
        for row in rows
    ]


def _gradebook_csv(course, assignment, rows) -> HttpResponse:
    """The gradebook page's CSV (jobs.gradebook.gradebook_csv): the same header, rows, cells and file name."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(CSV_HEADER)
    for row in rows:
        writer.writerow([spreadsheet_safe(cell) for cell in row.csv_row()])
    name = f"{course.slug}-{assignment.slug}-grades-{timezone.localdate()}.csv"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return HttpResponse(text.getvalue(), content_type="text/csv; charset=utf-8", headers=headers)


# --- the course usage report ---


class UsageOut(Schema):
    label: str
    key: str
    jobs: int
    gpu_seconds: int
    cpu_seconds: int
    billing_seconds: int
    completed: int
    failed: int
    cancelled: int
    live: int
    median_wait: float | None
    note: str


class UsageReportOut(Schema):
    course: str
    first: date
    last: date
    total: UsageOut
    clusters: list[UsageOut]  # one row per cluster (the portal's own first): a job id is a job on its cluster only
    students: list[UsageOut]
    assignments: list[UsageOut]
    as_of: datetime  # when the figures were computed (running jobs count up to then)
    updating: bool  # newer figures are being computed: ask again in a moment


class RangeQuery(Schema):
    first: str | None = None
    last: str | None = None


@api.get("/courses/{slug}/usage", response={200: UsageReportOut, **_errors(403, 404)}, summary="A course's usage")
def usage(request: HttpRequest, slug: Slug, query: Query[RangeQuery]):
    """The course usage report's rows (course staff), for the days ?first= to ?last= (YYYY-MM-DD) as on its
    page: by default from the course's start to today."""
    caller = Caller.of(request)
    caller.require_course(Scope.READ_REPORTS, slug)
    course, _ = course_get_for_user(user=caller.user, slug=slug, roles=STAFF_ROLES)
    params = {name: value for name, value in query.dict().items() if value is not None}
    try:
        window, form = range_from_request(params, default_first=course_default_first(course))
    except OverflowError as error:
        raise ValidationError("Those days are outside the calendar the portal can count.") from error
    if form.is_bound:
        _valid(form)
    report = course_report_cached(course=course, window=window)
    return {
        "course": course.slug,
        "first": window.first,
        "last": window.last,
        "total": report.total,
        "clusters": report.clusters,
        "students": report.students,
        "assignments": report.assignments,
        "as_of": report.computed_at,
        "updating": report.updating,
    }
