"""Lab sessions on the cluster (worker side): make the Slurm reservation before a lab, remove it after.

Scheduling and the overlap check live in courses (courses.services.lab_session_schedule); which
reservation a job runs in is clusterpolicy.selectors.lab_reservation_for. This module runs Slurm
commands, so only Celery (the `labs_tick` task) and tests call it. Portal jobs that still wait for the
reservation of an ended or cancelled lab are moved to the normal queue by
jobs.dispatch.jobs_leave_ended_labs, which the same task runs next. State changes are compare-and-set
on LabSession.state, so a duplicated tick is harmless.

A lab is reserved on its course's cluster: the portal's own, or another one of the same slurmdbd
(Course.cluster, reached with `scontrol -M`), among that cluster's reservable nodes
(courses.selectors.lab_reservable_nodes).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from courses.clusters import cluster_name, lab_cluster, labs_on, session_cluster
from courses.models import LabSession
from courses.selectors import lab_reservable_nodes
from slurm import SlurmError, SlurmRejected, SlurmUnavailable, reservations

log = logging.getLogger(__name__)
State = LabSession.State


def reservation_name(session: LabSession) -> str:
    return f"lq-{session.course.slug}-{session.pk}"[:64]


def _free_nodes(session: LabSession) -> list[str]:
    """Reservable nodes of the session's cluster not held by another portal lab on that cluster overlapping it."""
    cluster = lab_cluster(session.course.cluster)  # a federated course's labs are on the own cluster
    busy = set()
    others = LabSession.objects.filter(
        labs_on(cluster),  # two clusters may name their nodes alike
        reservation_active=True,
        starts_at__lt=session.ends_at,
        ends_at__gt=session.starts_at,
    )
    for other in others.exclude(pk=session.pk):
        busy.update(filter(None, other.reserved_nodes.split(",")))
    return [node for node in lab_reservable_nodes(cluster=cluster) if node not in busy]


def _create_argv(session: LabSession, *, name: str) -> list[str]:
    """The session's `scontrol create reservation`, on its course's cluster, by LABQUEUE_RESERVATION_STRATEGY."""
    course = session.course
    start = session.starts_at if session.starts_at > timezone.now() else None
    where = {"name": name, "account": course.slurm_account, "start": start, "end": session.ends_at}
    if settings.LABQUEUE_RESERVATION_STRATEGY == "gpus":
        return reservations.create_argv(
            **where, gpus=session.gpus or 1, partition=course.partition, cluster=lab_cluster(course.cluster)
        )
    nodes = _free_nodes(session)[: session.nodes]
    if len(nodes) < session.nodes:
        raise SlurmRejected(f"only {len(nodes)} reservable node(s) free for this lab, {session.nodes} needed")
    return reservations.create_argv(**where, nodes=nodes, cluster=lab_cluster(course.cluster))


def lab_reserve(*, session: LabSession) -> bool:
    """Create the session's reservation in Slurm (scheduled -> reserved, or -> failed with Slurm's reason)."""
    if session.state != State.SCHEDULED:
        return False
    name = reservation_name(session)
    on = cluster_name(lab_cluster(session.course.cluster))  # kept: the reservation stays there if the course moves
    try:
        made = reservations.reservation_create(_create_argv(session, name=name))
    except SlurmRejected as error:
        LabSession.objects.filter(pk=session.pk, state=State.SCHEDULED).update(
            state=State.FAILED, message=f"Slurm refused the reservation: {error}"
        )
        return False
    updated = LabSession.objects.filter(pk=session.pk, state=State.SCHEDULED).update(
        state=State.RESERVED,
        reservation_name=name,
        reservation_active=True,
        reserved_nodes=made.nodes if made else "",
        reserved_on=on,
        message="",
    )
    if not updated:  # cancelled while we were creating it: take it away again
        LabSession.objects.filter(pk=session.pk).update(reservation_name=name, reservation_active=True, reserved_on=on)
    elif made and made.nodes and not settings.LABQUEUE_LAB_QOS:
        _say_when_nodes_free(session, made.nodes)
    return bool(updated)


def _say_when_nodes_free(session: LabSession, nodes: str) -> None:
    """A site without preemption (no LABQUEUE_LAB_QOS): jobs already running on the lab's nodes finish first, and
    the lab page says by when at the latest (their time limits). Reserving goes on if Slurm does not answer."""
    try:
        free_by = reservations.nodes_busy_until(nodes, cluster=session_cluster(session))
    except SlurmError as error:
        log.info("lab %s: could not tell when its nodes free up: %s", session.pk, error)
        return
    if free_by and free_by > session.starts_at:
        message = (
            "Jobs that started before the lab are still running on its GPUs; the lab's GPUs free up by "
            f"{timezone.localtime(free_by):%H:%M} at the latest (when those jobs' time limits run out)."
        )
        LabSession.objects.filter(pk=session.pk, state=State.RESERVED, message="").update(message=message)


def lab_release(*, session: LabSession) -> None:
    """Remove an ended or cancelled session's reservation (jobs still waiting for it: see the module doc)."""
    reservations.reservation_delete(session.reservation_name, cluster=session_cluster(session))
    LabSession.objects.filter(pk=session.pk).update(reservation_active=False, message="")


def labs_tick(*, now=None) -> dict[str, int]:
    """Reserve labs about to start, end labs that are over, release reservations no longer needed."""
    now = now or timezone.now()
    lead = timedelta(minutes=settings.LABQUEUE_LAB_RESERVE_AHEAD_MINUTES)
    counts = {"reserved": 0, "ended": 0, "released": 0}
    due = LabSession.objects.filter(state=State.SCHEDULED, starts_at__lte=now + lead, ends_at__gt=now)
    for session in due.select_related("course"):
        try:
            counts["reserved"] += lab_reserve(session=session)
        except SlurmUnavailable as error:  # its cluster is not answering: the next tick tries again, others go on
            log.warning("lab %s: not reserved yet, Slurm did not answer: %s", session.pk, error)
    counts["ended"] = LabSession.objects.filter(state=State.RESERVED, ends_at__lte=now).update(state=State.ENDED)
    LabSession.objects.filter(state=State.SCHEDULED, ends_at__lte=now).update(
        state=State.FAILED, message="The lab ended before the portal could reserve it (was the worker running?)."
    )
    counts["released"] = labs_release_ended()
    return counts


def labs_release_ended() -> int:
    """Remove the reservations of ended or cancelled labs; how many were removed.

    Slurm refuses ("Requested reservation is in use") while jobs run in the reservation or wait for
    it: the lab says so, and a later tick tries again (the labs_tick task first moves waiting portal
    jobs to the normal queue, then calls this again)."""
    released = 0
    over = LabSession.objects.filter(reservation_active=True, state__in=[State.ENDED, State.CANCELLED])
    for session in over.select_related("course"):
        try:
            lab_release(session=session)
            released += 1
        except SlurmError as error:
            log.warning("lab %s: could not remove reservation %s: %s", session.pk, session.reservation_name, error)
            message = f"The reservation is removed once the jobs still running in it end (Slurm: {error})."
            LabSession.objects.filter(pk=session.pk).update(message=message)
    return released
