import copy
from dataclasses import replace

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from courses.models import Assignment, AssignmentVersion, Course, CourseCeiling, Enrollment, LabSession, Role
from courses.policy import Ceilings, held_to_ceilings
from courses.scripting import Resources, default_values, render_script, script_diff


def enrollment_list(*, user) -> QuerySet[Enrollment]:
    return Enrollment.objects.filter(user=user).select_related("course").order_by("course__code")


def course_role(*, user, course: Course) -> str | None:
    """The user's role in the course; operations staff act as instructors everywhere."""
    if user.is_staff:
        return Role.INSTRUCTOR
    return Enrollment.objects.filter(user=user, course=course).values_list("role", flat=True).first()


def course_get_for_user(*, user, slug: str, roles: tuple[str, ...] = tuple(Role)) -> tuple[Course, str]:
    """The course and the user's role. Not a member: 404. A member in another role: 403."""
    course = Course.objects.filter(slug=slug).first()
    role = course_role(user=user, course=course) if course is not None else None
    if role is None:  # the same answer for a course that does not exist and one the user is not in
        raise Http404("No such course.")
    if role not in roles:
        raise PermissionDenied("Your role in this course does not allow this.")
    return course, role


def assignment_get(*, course: Course, slug: str) -> Assignment:
    assignment = get_object_or_404(Assignment.objects.prefetch_related("datasets"), course=course, slug=slug)
    assignment.course = course  # the course the caller holds: not read a second time
    return assignment


def assignment_list(*, course: Course) -> QuerySet[Assignment]:
    return Assignment.objects.filter(course=course).order_by("title")


def roster_current(*, course: Course) -> dict[str, str]:
    """netid -> role of everyone enrolled who has a cluster user name (the roster keys people by netid)."""
    rows = Enrollment.objects.filter(course=course, user__netid__isnull=False).values_list("user__netid", "role")
    return dict(rows)


def lab_reservable_nodes(*, cluster: str) -> list[str]:
    """The nodes labs may reserve on `cluster`: the portal's own (empty) has LABQUEUE_RESERVABLE_NODES, another
    cluster its entry of LABQUEUE_RESERVABLE_NODES_BY_CLUSTER (none listed: none)."""
    if not cluster:
        return list(settings.LABQUEUE_RESERVABLE_NODES)
    return list(settings.LABQUEUE_RESERVABLE_NODES_BY_CLUSTER.get(cluster, []))


def lab_session_list(*, course: Course) -> QuerySet[LabSession]:
    return LabSession.objects.filter(course=course).order_by("-starts_at")


def lab_session_next(*, course: Course, now=None) -> LabSession | None:
    """The lab that is on now or comes next (not cancelled, not failed)."""
    now = now or timezone.now()
    open_states = (LabSession.State.SCHEDULED, LabSession.State.RESERVED)
    sessions = LabSession.objects.filter(course=course, state__in=open_states, ends_at__gt=now)
    return sessions.order_by("starts_at").first()


def lab_in_progress(*, course: Course, now=None) -> LabSession | None:
    """The course's lab that is on now (scheduled or reserved), if any."""
    now = now or timezone.now()
    open_states = (LabSession.State.SCHEDULED, LabSession.State.RESERVED)
    sessions = LabSession.objects.filter(course=course, state__in=open_states, starts_at__lte=now, ends_at__gt=now)
    return sessions.order_by("starts_at").first()


def lab_session_get(*, course: Course, session_uuid) -> LabSession:
    return get_object_or_404(LabSession, course=course, uuid=session_uuid)


CEILING_NUMBERS = (
    "gpus_per_job",
    "cpus_per_job",
    "mem_mb_per_job",
    "minutes_per_job",
    "jobs_per_student",
    "gpu_hours_per_student",
    "gpus_per_course",
)


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def course_ceilings(*, course: Course) -> Ceilings:
    """Operations staff's ceilings for this course: its own (CourseCeiling, set in the Django admin) where
    given, else the site-wide LABQUEUE_CEILING_* and LABQUEUE_ALLOWED_* settings (read now)."""
    site = Ceilings(
        gpus_per_job=settings.LABQUEUE_CEILING_GPUS_PER_JOB,
        cpus_per_job=settings.LABQUEUE_CEILING_CPUS_PER_JOB,
        mem_mb_per_job=settings.LABQUEUE_CEILING_MEM_MB_PER_JOB,
        minutes_per_job=settings.LABQUEUE_CEILING_MINUTES_PER_JOB,
        jobs_per_student=settings.LABQUEUE_CEILING_JOBS_PER_STUDENT or None,
        gpu_hours_per_student=settings.LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT or None,
        gpus_per_course=settings.LABQUEUE_CEILING_GPUS_PER_COURSE or None,
        qos=tuple(settings.LABQUEUE_ALLOWED_QOS),
        partitions=tuple(settings.LABQUEUE_ALLOWED_PARTITIONS),
    )
    own = CourseCeiling.objects.filter(course_id=course.pk).first()
    if own is None:
        return site
    numbers = {name: getattr(own, name) for name in CEILING_NUMBERS if getattr(own, name) is not None}
    qos, partitions = _names(own.allowed_qos) or site.qos, _names(own.allowed_partitions) or site.partitions
    return replace(site, **numbers, qos=qos, partitions=partitions)


def assignment_version_latest(*, assignment: Assignment) -> AssignmentVersion | None:
    return AssignmentVersion.objects.filter(assignment=assignment).order_by("-number").first()


def assignment_version_list(*, assignment: Assignment) -> QuerySet[AssignmentVersion]:
    return AssignmentVersion.objects.filter(assignment=assignment).select_related("author").order_by("-number")


def assignment_preview(*, assignment: Assignment) -> str:
    """The batch script the portal submits for the assignment's default values (for course staff)."""
    dataset = assignment.datasets.first() if assignment.pk else None
    return render_script(
        body=assignment.script_template,
        values=default_values(assignment.parameters),
        resources=Resources(**assignment.default_resources),
        dataset_path=dataset.path if dataset else "",
        label=f"{assignment.course.code}: {assignment.title}",
    )


def assignment_versions(*, assignment: Assignment) -> dict:
    """The kept script versions (newest first) and the diff of the last change, for course staff."""
    versions = list(assignment_version_list(assignment=assignment)[:20])
    diff = ""
    if len(versions) > 1:
        new, old = versions[0], versions[1]
        diff = script_diff(
            old.script_template,
            new.script_template,
            old_label=f"version {old.number}",
            new_label=f"version {new.number} ({new.author or 'unknown'})",
        )
    return {"versions": versions, "version_diff": diff}


def course_within_ceilings(*, course: Course) -> Course:
    """An unsaved copy of the course with its limits held to operations staff's ceilings: what the portal
    enforces on jobs, also for a course row saved before the ceilings existed or written directly."""
    held, _ = held_to_ceilings(course=course, ceilings=course_ceilings(course=course))
    limited = copy.copy(course)
    for name, value in held.items():
        setattr(limited, name, value)
    return limited
