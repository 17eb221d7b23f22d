from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from courses.models import Assignment, Course, Enrollment, LabSession, Role


def enrollment_list(*, user) -> QuerySet[Enrollment]:
    return Enrollment.objects.filter(user=user).select_related("course").order_by("course__code")


def course_role(*, user, course: Course) -> str | None:
    """The user's role in the course; operations staff act as instructors everywhere."""
    if user.is_staff:
        return Role.INSTRUCTOR
    return Enrollment.objects.filter(user=user, course=course).values_list("role", flat=True).first()


def course_get_for_user(*, user, slug: str, roles: tuple[str, ...] = tuple(Role)) -> tuple[Course, str]:
    """The course and the user's role. Not a member: 404. A member in another role: 403."""
    course = get_object_or_404(Course, slug=slug)
    role = course_role(user=user, course=course)
    if role is None:
        raise Http404("No such course.")
    if role not in roles:
        raise PermissionDenied("Your role in this course does not allow this.")
    return course, role


def assignment_get(*, course: Course, slug: str) -> Assignment:
    return get_object_or_404(Assignment.objects.prefetch_related("datasets"), course=course, slug=slug)


def assignment_list(*, course: Course) -> QuerySet[Assignment]:
    return Assignment.objects.filter(course=course).order_by("title")


def roster_current(*, course: Course) -> dict[str, str]:
    """netid -> role of everyone enrolled who has a cluster user name (the roster keys people by netid)."""
    rows = Enrollment.objects.filter(course=course, user__netid__isnull=False).values_list("user__netid", "role")
    return dict(rows)


def lab_session_list(*, course: Course) -> QuerySet[LabSession]:
    return LabSession.objects.filter(course=course).order_by("-starts_at")


def lab_session_next(*, course: Course, now=None) -> LabSession | None:
    """The lab that is on now or comes next (not cancelled, not failed)."""
    now = now or timezone.now()
    open_states = (LabSession.State.SCHEDULED, LabSession.State.RESERVED)
    sessions = LabSession.objects.filter(course=course, state__in=open_states, ends_at__gt=now)
    return sessions.order_by("starts_at").first()


def lab_session_get(*, course: Course, session_uuid) -> LabSession:
    return get_object_or_404(LabSession, course=course, uuid=session_uuid)
