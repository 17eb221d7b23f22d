"""The gradebook (web side): per assignment, each student's attempts, best and last check score, late flag and
the last attempt's checks, for the course's TAs and instructors; the same rows as a CSV an LMS gradebook
imports (netid, name, score, late); and "Download all results": one zip, streamed, with a folder per student
(named by netid) holding their latest completed attempt's files, and SKIPPED.txt naming who is not in it and why.
The zip reads the job directories as the single job's "Download all" does (jobs.files: no symlinks, only the
student's own files, one rule for names); nothing here calls Slurm.

Scores come from the assignment's checks (jobs.checks): automatic feedback, not tamper-proof grading (README,
"Checks"). The score that counts is the best one: the highest share of its maximum, the later attempt on a tie;
`late` is that attempt's late flag (with no score yet, the last attempt's).
"""

import csv
import io
import re
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from courses.models import STAFF_ROLES, Assignment, Course, Enrollment, Role
from courses.selectors import assignment_get, assignment_list, course_get_for_user
from jobs import files
from jobs.models import CheckRun, CheckStatus, Job, Status
from portal.models import POSIX_NAME
from portal.spreadsheet import spreadsheet_safe

CSV_HEADER = ["netid", "name", "score", "late"]


@dataclass(frozen=True)
class GradeRow:
    """One student's line of an assignment's gradebook. Scores are text as shown ("7.5"), "" when none."""

    netid: str
    name: str
    attempts: int
    best: str
    best_max: str
    best_job: Job | None
    last: str
    last_max: str
    last_job: Job | None
    late: bool
    last_check: CheckRun | None

    def csv_row(self) -> list[str]:
        return [self.netid, self.name, self.best, "yes" if self.late else "no"]


def points(value: Decimal | None) -> str:
    """A score as the gradebook writes it: no trailing zeros ("7.5", "10"), "" for none."""
    return "" if value is None else f"{value.normalize():f}"


def _scored(job: Job) -> CheckRun | None:
    run = getattr(job, "check_run", None)
    return run if run is not None and run.status == CheckStatus.DONE and run.max_score else None


def _row(enrollment: Enrollment, jobs: list[Job]) -> GradeRow:
    """The row of one student from their jobs of the assignment, oldest first."""
    user, last_job = enrollment.user, jobs[-1] if jobs else None
    scored = [job for job in jobs if _scored(job)]
    best_job = max(
        scored, key=lambda job: (job.check_run.score / job.check_run.max_score, job.created_at), default=None
    )
    best_run, last_run = (_scored(best_job) if best_job else None), (_scored(last_job) if last_job else None)
    return GradeRow(
        netid=user.netid or "",
        name=user.get_full_name() or user.username,
        attempts=len(jobs),
        best=points(best_run.score) if best_run else "",
        best_max=points(best_run.max_score) if best_run else "",
        best_job=best_job,
        last=points(last_run.score) if last_run else "",
        last_max=points(last_run.max_score) if last_run else "",
        last_job=last_job,
        late=(best_job or last_job).late if (best_job or last_job) else False,
        last_check=getattr(last_job, "check_run", None) if last_job else None,
    )


def gradebook_rows(*, assignment: Assignment) -> list[GradeRow]:
    """Every student enrolled in the assignment's course, by netid, with their jobs of it: two queries."""
    students = Enrollment.objects.filter(course_id=assignment.course_id, role=Role.STUDENT).select_related("user")
    jobs_by_user: dict[int, list[Job]] = {}
    for job in Job.objects.filter(assignment=assignment).select_related("check_run").order_by("created_at", "pk"):
        jobs_by_user.setdefault(job.user_id, []).append(job)
    rows = [_row(enrollment, jobs_by_user.get(enrollment.user_id, [])) for enrollment in students]
    return sorted(rows, key=lambda row: (row.netid, row.name))


@require_GET
@login_required
def gradebook_index(request: HttpRequest, slug: str) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    return render(
        request, "jobs/gradebook_index.html", {"course": course, "assignments": assignment_list(course=course)}
    )


@require_GET
@login_required
def gradebook_detail(request: HttpRequest, slug: str, assignment_slug: str) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    assignment = assignment_get(course=course, slug=assignment_slug)
    context = {"course": course, "assignment": assignment, "rows": gradebook_rows(assignment=assignment)}
    context["zip_max_mb"] = settings.LABQUEUE_ZIP_MAX_BYTES // MB
    return render(request, "jobs/gradebook_detail.html", context)


@require_GET
@login_required
def gradebook_csv(request: HttpRequest, slug: str, assignment_slug: str) -> HttpResponse:
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    assignment = assignment_get(course=course, slug=assignment_slug)
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(CSV_HEADER)
    for row in gradebook_rows(assignment=assignment):
        writer.writerow([spreadsheet_safe(cell) for cell in row.csv_row()])
    name = f"{course.slug}-{assignment.slug}-grades-{timezone.localdate()}.csv"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return HttpResponse(text.getvalue(), content_type="text/csv; charset=utf-8", headers=headers)


#: The note at the top of the results zip that names the students left out.
SKIPPED_NAME = "SKIPPED.txt"
MB = 1024 * 1024


@dataclass(frozen=True)
class Skipped:
    """A student whose results are not in the zip, and why, in words for the instructor."""

    who: str
    reason: str


def _skip_reason(enrollment: Enrollment, job: Job | None) -> str | None:
    """Why this student's latest completed attempt cannot be zipped, before its files are looked at."""
    if job is None:
        return "no completed attempt of this assignment"
    if not re.fullmatch(POSIX_NAME, enrollment.user.netid or ""):
        return "their cluster username cannot be used as a folder name"
    if job.files_purged_at is not None:
        return "the files of their latest completed attempt were removed under the retention policy"
    if files.unreadable(job.workdir):
        return "the portal cannot read the folder of their latest completed attempt (it was closed to the portal)"
    return None


#: One student's folder of the results zip: (job directory, folder name, the files found there with their sizes).
Folder = tuple[str, str, list[tuple[str, int]]]


def results_plan(*, assignment: Assignment, max_bytes: int) -> tuple[list[Folder], list[Skipped]]:
    """What the results zip holds: per student, by netid, (job directory, netid, files) of their latest
    completed attempt while the total stays within `max_bytes`; and the students left out. Two queries, then
    one bounded walk per student's directory (jobs.files.offered_files)."""
    students = Enrollment.objects.filter(course_id=assignment.course_id, role=Role.STUDENT).select_related("user")
    latest: dict[int, Job] = {}
    completed = Job.objects.filter(assignment=assignment, status=Status.COMPLETED).order_by("created_at", "pk")
    for job in completed.only("user_id", "workdir", "files_purged_at"):
        latest[job.user_id] = job
    folders: list[Folder] = []
    skipped: list[Skipped] = []
    total = 0
    for enrollment in sorted(students, key=lambda e: (e.user.netid or "", e.user.username)):
        user, job = enrollment.user, latest.get(enrollment.user_id)
        name = " ".join((user.get_full_name() or user.username).split())  # one line each, whatever the name holds
        who = f"{user.netid or user.username} ({name})"
        reason = _skip_reason(enrollment, job)
        found = files.offered_files(job.workdir) if reason is None else []
        size = sum(size for _, size in found)
        if reason is None and not found:
            reason = "their latest completed attempt left no files the portal can offer"
        elif reason is None and total + size > max_bytes:
            reason = f"their files ({size / MB:.1f} MB) would take the zip over its {max_bytes // MB} MB limit"
        if reason:
            skipped.append(Skipped(who=who, reason=reason))
            continue
        folders.append((job.workdir, user.netid, found))
        total += size
    return folders, skipped


def skipped_text(*, course: Course, assignment: Assignment, skipped: list[Skipped]) -> str:
    """SKIPPED.txt: who of the course's students is not in the zip, one per line, and why."""
    title = f"{course.code}, {assignment.title}"
    if not skipped:
        return f"{title}: every enrolled student's latest completed attempt is in this zip.\n"
    lines = [f"{title}: students whose results are not in this zip, and why.", ""]
    lines += [f"{entry.who}: {entry.reason}" for entry in skipped]
    return "\n".join(lines) + "\n"


@require_GET
@login_required
def gradebook_results_zip(request: HttpRequest, slug: str, assignment_slug: str) -> HttpResponse:
    """Every student's latest completed attempt of the assignment in one zip, streamed; who is left out is in
    SKIPPED.txt, so the download never fails on one student's files."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=STAFF_ROLES)
    assignment = assignment_get(course=course, slug=assignment_slug)
    folders, skipped = results_plan(assignment=assignment, max_bytes=settings.LABQUEUE_ZIP_MAX_BYTES)
    note = skipped_text(course=course, assignment=assignment, skipped=skipped).encode()
    chunks = files.zip_folders_stream(folders, notes=((SKIPPED_NAME, note),))
    response = StreamingHttpResponse(chunks, content_type="application/zip")
    name = f"{course.slug}-{assignment.slug}-results-{timezone.localdate()}.zip"
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response
