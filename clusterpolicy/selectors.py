"""Reads of the cluster-side course policy: the QOS and lab reservation a job gets, the last reconciliation."""

from datetime import timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from clusterpolicy.models import AssociationRun
from courses.clusters import lab_cluster, labs_on
from courses.models import Course, LabSession
from courses.selectors import course_ceilings


def course_qos(course: Course) -> str:
    """The QOS the course's jobs are submitted with ("" for Slurm's default). A course QOS outside operations
    staff's allow-list (saved before the list existed, or written directly) is ignored: the site's is used."""
    allowed = course.qos and course.qos in course_ceilings(course=course).qos
    return course.qos if allowed else getattr(settings, "LABQUEUE_COURSE_QOS", "")


def lab_reservation_for(*, course: Course, minutes: int, now=None) -> str:
    """The reservation a job of `course` asking for `minutes` should run in now, or "".

    Only while a lab is on and only when the job can end before the lab does: Slurm does not start
    a job in a reservation it would outlast.
    """
    now = now or timezone.now()
    session = (
        LabSession.objects.filter(course=course, state=LabSession.State.RESERVED, reservation_active=True)
        .filter(labs_on(lab_cluster(course.cluster)))  # not a lab left on a cluster the course moved away from
        .filter(starts_at__lte=now, ends_at__gt=now + timedelta(minutes=minutes))
        .order_by("starts_at")
        .first()
    )
    return session.reservation_name if session else ""


def lab_reservations_over() -> QuerySet[LabSession]:
    """Lab sessions whose Slurm reservation the worker made and no longer wants: the lab ended or was
    cancelled (the reservation may still exist while jobs wait for it), or it was removed."""
    over = Q(reservation_active=False) | Q(state__in=[LabSession.State.ENDED, LabSession.State.CANCELLED])
    return LabSession.objects.exclude(reservation_name="").filter(over)


def association_run_last() -> AssociationRun | None:
    """The latest finished reconciliation (what the staff drift page shows)."""
    return AssociationRun.objects.filter(finished_at__isnull=False).first()


def association_run_list(*, limit: int = 20) -> QuerySet[AssociationRun]:
    return AssociationRun.objects.filter(finished_at__isnull=False)[:limit]
