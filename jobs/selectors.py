from uuid import UUID

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from courses.models import STAFF_ROLES, Course
from courses.selectors import course_role
from jobs.models import Job


def job_get_for_user(*, user, job_uuid: UUID, owner_action: bool = False) -> Job:
    """The job if the user may see it: its owner, or the course's TAs and instructors.

    Someone else's job is a 404. Course staff asking for an owner-only action get 403.
    """
    job = Job.objects.select_related("assignment__course", "user", "dataset").filter(uuid=job_uuid).first()
    if job is None:
        raise Http404("No such job.")
    if job.user_id == user.pk:
        return job
    if course_role(user=user, course=job.assignment.course) in STAFF_ROLES:
        if owner_action:
            raise PermissionDenied("Only the student who submitted this job can do that.")
        return job
    raise Http404("No such job.")


def job_list(*, user, course_slug: str = "") -> QuerySet[Job]:
    jobs = Job.objects.filter(user=user).select_related("assignment__course")
    if course_slug:
        jobs = jobs.filter(assignment__course__slug=course_slug)
    return jobs.order_by("-created_at")


def job_list_for_course(*, course: Course, status: str = "") -> QuerySet[Job]:
    jobs = Job.objects.filter(assignment__course=course).select_related("assignment", "user")
    if status:
        jobs = jobs.filter(status=status)
    return jobs.order_by("-created_at")
