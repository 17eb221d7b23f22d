from datetime import timedelta
from statistics import median
from uuid import UUID

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone

from courses.clusters import is_federated
from courses.models import STAFF_ROLES, Assignment, AssignmentVersion, Course, Enrollment, Role, VersionStarterFile
from courses.scripting import script_body, script_diff
from courses.selectors import assignment_version_latest, course_role
from jobs.models import CheckStatus, Heartbeat, Job, Status, cluster_heartbeat_name

FAILED = (Status.FAILED, Status.REJECTED)


def job_get_for_user(*, user, job_uuid: UUID, owner_action: bool = False, staff_action: bool = False) -> Job:
    """The job if the user may see it: its owner, or the course's TAs and instructors.

    Someone else's job is a 404. Course staff asking for an owner-only action get 403;
    so does the owner asking for a staff-only action (notes, review).
    """
    job = Job.objects.select_related("assignment__course", "user", "dataset").filter(uuid=job_uuid).first()
    if job is None:
        raise Http404("No such job.")
    if job.user_id == user.pk and not staff_action:
        return job
    if course_role(user=user, course=job.assignment.course) in STAFF_ROLES:
        if owner_action:
            raise PermissionDenied("Only the student who submitted this job can do that.")
        return job
    if job.user_id == user.pk:
        raise PermissionDenied("Only course staff can do that.")
    raise Http404("No such job.")


#: The columns a job list shows (jobs/_job_row.html, the failed-jobs table): a list of hundreds of jobs reads
#: neither their scripts nor their accounting records.
LIST_FIELDS = (
    "uuid",
    "user__username",
    "user__first_name",
    "user__last_name",
    "run_as",
    "status",
    "slurm_job_id",
    "created_at",
    "late",
    "attempt",
    "explanation_key",
    "elapsed_seconds",
    "reviewed_at",
    "assignment__slug",
    "assignment__title",
    "assignment__course__slug",
    "assignment__course__code",
)


def job_list(*, user, course_slug: str = "") -> QuerySet[Job]:
    jobs = Job.objects.filter(user=user).select_related("assignment__course", "user").only(*LIST_FIELDS)
    if course_slug:
        jobs = jobs.filter(assignment__course__slug=course_slug)
    return jobs.order_by("-created_at")


def job_list_for_course(*, course: Course, status: str = "", assignment: str = "", student: str = "") -> QuerySet[Job]:
    jobs = Job.objects.filter(assignment__course=course).select_related("assignment__course", "user")
    jobs = jobs.only(*LIST_FIELDS)
    if status:
        jobs = jobs.filter(status=status)
    return _matching(jobs, assignment=assignment, student=student).order_by("-created_at")


def job_list_failed(*, course: Course, assignment: str = "", explanation: str = "", student: str = "") -> QuerySet[Job]:
    jobs = Job.objects.filter(assignment__course=course, status__in=FAILED).select_related("assignment__course", "user")
    jobs = jobs.only(*LIST_FIELDS)
    if explanation:
        jobs = jobs.filter(explanation_key=explanation)
    return _matching(jobs, assignment=assignment, student=student).order_by("-created_at")


def _matching(jobs: QuerySet[Job], *, assignment: str, student: str) -> QuerySet[Job]:
    """Jobs of one assignment (its slug) and of students whose username, cluster username or name contains
    `student` (any case)."""
    if assignment:
        jobs = jobs.filter(assignment__slug=assignment)
    if student:
        jobs = jobs.filter(
            Q(user__username__icontains=student)
            | Q(run_as__icontains=student)
            | Q(user__first_name__icontains=student)
            | Q(user__last_name__icontains=student)
        )
    return jobs


def failure_counts(*, course: Course, days: int) -> list[dict]:
    """How many failed attempts each explanation had in the last `days` days, commonest first."""
    since = timezone.now() - timedelta(days=days)
    rows = Job.objects.filter(assignment__course=course, status__in=FAILED, created_at__gte=since)
    return list(rows.values("explanation_key").annotate(count=Count("pk")).order_by("-count", "explanation_key"))


def job_attempts(*, job: Job) -> list[Job]:
    """Every attempt in the job's retry chain, first to last (a short chain: one query per link)."""
    chain = [job]
    while chain[0].retry_of_id:
        chain.insert(0, Job.objects.only("uuid", "attempt", "status", "retry_of").get(pk=chain[0].retry_of_id))
    later = Job.objects.filter(retry_of=chain[-1]).only("uuid", "attempt", "status", "retry_of").first()
    while later is not None:
        chain.append(later)
        later = Job.objects.filter(retry_of=later).only("uuid", "attempt", "status", "retry_of").first()
    return chain


LIVE = (Status.QUEUED, Status.SUBMITTING, Status.PENDING, Status.RUNNING)


def job_list_active(*, user, limit: int = 20) -> list[Job]:
    """The user's jobs waiting or running now, newest first (at most `limit`)."""
    jobs = Job.objects.filter(user=user, status__in=LIVE).select_related("assignment__course")
    return list(jobs.order_by("-created_at")[:limit])


def job_list_recent_failures(*, user, days: int = 14, limit: int = 5) -> list[Job]:
    """The user's failed or refused attempts of the last `days` days, newest first (at most `limit`)."""
    since = timezone.now() - timedelta(days=days)
    jobs = Job.objects.filter(user=user, status__in=FAILED, created_at__gte=since).select_related("assignment__course")
    return list(jobs.order_by("-created_at")[:limit])


def student_standing(*, user, course: Course, assignment: Assignment) -> dict:
    """In one query, what a new job of the student's is held to: their jobs in the course waiting or running
    (`live`, in the portal or in Slurm), their jobs of the assignment (`attempts`), and the GPU-seconds their
    finished jobs in the course used (`finished_gpu_seconds`)."""
    jobs = Job.objects.filter(user=user, assignment__course=course)
    standing = jobs.aggregate(
        live=Count("pk", filter=Q(status__in=LIVE)),
        attempts=Count("pk", filter=Q(assignment=assignment)),
        finished_gpu_seconds=Sum(F("gpus") * F("elapsed_seconds")),
    )
    standing["finished_gpu_seconds"] = standing["finished_gpu_seconds"] or 0
    return standing


def student_gpu_hours(*, user, course: Course, finished_gpu_seconds: float | None = None) -> float:
    """GPU-hours the student's jobs in the course used: gpus x elapsed of finished jobs (summed in the
    database, unless given as `finished_gpu_seconds`), plus the time so far of the few running now."""
    jobs = Job.objects.filter(user=user, assignment__course=course)
    if finished_gpu_seconds is None:
        finished = jobs.aggregate(seconds=Sum(F("gpus") * F("elapsed_seconds")))
        finished_gpu_seconds = finished["seconds"] or 0
    running = jobs.filter(status=Status.RUNNING, elapsed_seconds__isnull=True, started_at__isnull=False, gpus__gt=0)
    now = timezone.now()
    so_far = sum(job.gpus * (now - job.started_at).total_seconds() for job in running.only("gpus", "started_at"))
    return (finished_gpu_seconds + so_far) / 3600


def course_gpus_in_use(*, course: Course) -> dict | None:
    """The GPUs the course's running jobs hold now against its cap (max_gpus_course), from the database alone;
    None when the course has no cap. "full": a job asking for a GPU would wait for one of them to finish."""
    cap = course.max_gpus_course
    if cap is None:
        return None
    running = Job.objects.filter(assignment__course=course, status=Status.RUNNING, left_queue_at=None)
    in_use = running.aggregate(gpus=Sum("gpus"))["gpus"] or 0
    return {"in_use": in_use, "cap": cap, "full": in_use >= cap}


#: How many of an assignment's latest completed attempts its typical use is taken from.
TYPICAL_USE_ATTEMPTS = 50


def assignment_typical_use(*, assignment: Assignment) -> dict | None:
    """The median use of the assignment's latest completed attempts whose usage the sync collected (one query):
    minutes run, CPUs kept busy, peak memory in MB (None where not measured); None when there is none yet."""
    rows = list(
        Job.objects.filter(assignment=assignment, status=Status.COMPLETED, usage_collected_at__isnull=False)
        .exclude(elapsed_seconds=None)
        .order_by("-ended_at")
        .values_list("elapsed_seconds", "cpu_seconds_used", "max_rss_mb")[:TYPICAL_USE_ATTEMPTS]
    )
    if not rows:
        return None
    busy = [cpu / elapsed for elapsed, cpu, _ in rows if elapsed and cpu is not None]
    memory = [rss for _, _, rss in rows if rss is not None]
    return {
        "attempts": len(rows),
        "minutes": median(elapsed for elapsed, _, _ in rows) / 60,
        "cpus_busy": median(busy) if busy else None,
        "mem_mb": round(median(memory)) if memory else None,
    }


def student_budget(*, user, course: Course) -> dict | None:
    """Used and remaining GPU-hours of the course's per-student budget; None when the course has none."""
    if course.gpu_hours_per_student is None:
        return None
    used = student_gpu_hours(user=user, course=course)
    budget = course.gpu_hours_per_student
    return {"budget": budget, "used": used, "remaining": max(0.0, budget - used), "spent": used >= budget}


def job_script_change(*, job: Job) -> dict | None:
    """How the assignment's script differs now from the one this attempt ran (the versions and a diff for
    course staff); None when it has not changed or the attempt's script is not on record."""
    version = job.assignment_version
    ran = version.script_template if version is not None else script_body(job.script)
    current = job.assignment.script_template
    if ran is None or ran.rstrip("\n") == current.rstrip("\n"):
        return None
    latest = assignment_version_latest(assignment=job.assignment)
    old_label = f"attempt {job.attempt}" + (f" (version {version.number})" if version else "")
    new_label = "current" + (f" (version {latest.number})" if latest else "")
    return {
        "ran": version,
        "current": latest,
        "diff": script_diff(ran, current, old_label=old_label, new_label=new_label),
    }


def job_starter_files(*, job: Job) -> QuerySet[VersionStarterFile]:
    """The starter files of the version the job records. A job made before versions were kept: those of the
    assignment's first version (the files the assignment had when versions began keeping them), never the
    files it has now."""
    if job.assignment_version_id is not None:
        return VersionStarterFile.objects.filter(version_id=job.assignment_version_id).order_by("name")
    return VersionStarterFile.objects.filter(version__assignment_id=job.assignment_id, version__number=1).order_by(
        "name"
    )


def job_version_change(*, job: Job) -> dict | None:
    """What the assignment's latest version changed since the one this attempt ran: the two versions, the
    names of the starter files added, replaced or removed, and whether the data sets offered differ. None when
    the attempt ran the latest version (or was made before versions were kept)."""
    ran = job.assignment_version
    latest = assignment_version_latest(assignment=job.assignment)
    if ran is None or latest is None or latest.number <= ran.number:
        return None
    return {
        "ran": ran,
        "current": latest,
        "starter_files": _starter_files_changed(ran, latest),
        "datasets": set(ran.datasets.values_list("pk", flat=True)) != set(latest.datasets.values_list("pk", flat=True)),
    }


def _starter_files_changed(old: AssignmentVersion, new: AssignmentVersion) -> list[str]:
    before = dict(old.starter_files.values_list("name", "sha256"))
    after = dict(new.starter_files.values_list("name", "sha256"))
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def student_last_attempt(*, user, assignment: Assignment) -> Job | None:
    return (
        Job.objects.filter(user=user, assignment=assignment)
        .select_related("assignment", "assignment_version")
        .order_by("-created_at")
        .first()
    )


def assignment_progress_list(*, course: Course) -> tuple[int, list[Assignment]]:
    """How each assignment of the course is going, for its staff: the number of students enrolled, and the
    course's assignments (by title) each annotated with how many of those students have `submitted` (any
    job), are `late` (a late job), `failing` (a failed or refused job) and `passing` (a check that gave full
    marks: their best check score is the maximum); "not yet" is enrolled minus submitted. Staff's own test
    jobs are not counted. Two queries, however many students, jobs and assignments."""
    students = Enrollment.objects.filter(course=course, role=Role.STUDENT)
    theirs = Q(jobs__user_id__in=students.values("user_id"))
    full_marks = Q(
        jobs__check_run__status=CheckStatus.DONE,
        jobs__check_run__max_score__gt=0,
        jobs__check_run__score__gte=F("jobs__check_run__max_score"),
    )
    assignments = Assignment.objects.filter(course=course).order_by("title")
    assignments = assignments.annotate(
        submitted=Count("jobs__user_id", distinct=True, filter=theirs),
        late=Count("jobs__user_id", distinct=True, filter=theirs & Q(jobs__late=True)),
        failing=Count("jobs__user_id", distinct=True, filter=theirs & Q(jobs__status__in=FAILED)),
        passing=Count("jobs__user_id", distinct=True, filter=theirs & full_marks),
    )
    return students.count(), list(assignments)


def cluster_silent_since(*, cluster: str):
    """When another cluster last answered the sync, if it has not for three sync periods (else None). The
    portal's own cluster is not judged here: /readyz and the out-of-date notes of job pages cover it."""
    if not cluster:
        return None
    if is_federated(cluster):  # its jobs wait while any member is silent: the first silent other cluster's
        others = (cluster_silent_since(cluster=other) for other in settings.LABQUEUE_SLURM_OTHER_CLUSTERS)
        return next((since for since in others if since), None)
    beat = Heartbeat.objects.filter(name=cluster_heartbeat_name(cluster)).values_list("at", flat=True).first()
    silent_after = timedelta(seconds=3 * settings.LABQUEUE_SYNC_SECONDS)
    if beat is not None and timezone.now() - beat <= silent_after:
        return None
    return beat or "never"
