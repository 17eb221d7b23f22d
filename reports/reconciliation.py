"""Reconciliation: the portal's own jobs against Slurm's accounting records for a course.

Lists every difference with its cause: Slurm jobs on the course account that the portal
did not submit, portal jobs Slurm has no record of, and records whose state or usage
disagrees with the portal job. A Slurm job is its cluster and job id (ids restart on each
cluster): a portal job's record is the one of the cluster the portal sent it to. Compares
only up to the last ingest of each cluster; never calls Slurm. Web side (the course report).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from uuid import UUID

from django.conf import settings
from django.db.models import BigIntegerField, Count, Exists, F, OuterRef, Q, QuerySet, Sum

from courses.clusters import federation_members, is_federated
from courses.models import Course
from jobs.models import Job, Status
from reports.models import AccountingCursor, UsageRecord
from reports.queries import (
    DIFFERENCES_SHOWN,
    ReportRange,
    Usage,
    cluster_named,
    expected_outcome,
    seconds_in,
    usage_records_in_range,
)


@dataclass(frozen=True)
class Difference:
    kind: str  # "outside", "missing" or "disagrees"
    slurm_job_id: str
    user: str
    cause: str
    job_uuid: UUID | None = None
    cluster: str = ""  # the record's cluster; for a missing record, the one the portal sent the job to

    LABELS = {
        "outside": "Slurm job the portal did not submit",
        "missing": "Portal job Slurm has no record of",
        "disagrees": "State or usage disagrees",
    }

    @property
    def label(self) -> str:
        return self.LABELS[self.kind]


@dataclass(frozen=True)
class Side:
    jobs: int
    gpu_seconds: int

    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / 3600


@dataclass(frozen=True)
class Reconciliation:
    portal: Side
    slurm: Side
    differences: list[Difference]
    ingested_until: datetime  # of the course's cluster
    cut: bool
    cluster: str = ""  # the course's cluster, by name

    @property
    def agrees(self) -> bool:
        return not self.differences and self.portal == self.slurm


def reconciliation(*, course: Course, window: ReportRange, now: datetime, slurm_side: Usage) -> Reconciliation | None:
    """Portal jobs of the course vs. Slurm's records on its account in the window. Five queries.

    Compared only up to where accounting has been copied (AccountingCursor), each job up to its own cluster's
    copy: a job submitted after that is not a difference yet. None before the first copy of the course's
    cluster (course.cluster, or the portal's own): nothing to compare.
    """
    copied = _copied(dict(AccountingCursor.objects.values_list("cluster", "ingested_until")))
    cluster = course.cluster or settings.LABQUEUE_SLURM_CLUSTER
    cursor = copied.get(cluster)
    if cursor is None:
        return None
    portal_jobs = (
        Job.objects.filter(assignment__course=course)
        .exclude(slurm_job_id="")
        .annotate(on_cluster=cluster_named("cluster"))
        .filter(_compared(copied, window))
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gte=window.start))
        .order_by()
    )
    portal = portal_jobs.aggregate(
        jobs=Count("pk"), gpu_seconds=Sum(F("gpus") * seconds_in(window, now), output_field=BigIntegerField())
    )
    found = [
        *_outside_the_portal(course=course, window=window),
        *_unknown_to_slurm(portal_jobs=portal_jobs),
        *_disagreements(course=course, window=window),
    ]
    return Reconciliation(
        portal=Side(portal["jobs"], int(portal["gpu_seconds"] or 0)),
        slurm=Side(slurm_side.jobs, slurm_side.gpu_seconds),
        differences=[difference for difference in found if difference is not None],
        ingested_until=cursor,
        cut=None in found,
        cluster=cluster,
    )


def _copied(cursors: dict[str, datetime]) -> dict[str, datetime]:
    """How far each cluster's accounting was copied, by name; the federation's (courses.clusters) is as far as
    every member's: a federated job's record may be on any of them."""
    members = federation_members()
    if members and all(member in cursors for member in members):
        cursors[settings.LABQUEUE_SLURM_FEDERATION] = min(cursors[member] for member in members)
    return cursors


def _where_sent(on_cluster: F | OuterRef) -> Q:
    """Records (linked to a job) on the cluster the job was sent to, `on_cluster`; for a job sent to the
    federation, on any of its members: the one that ran it files the record."""
    where = Q(cluster=on_cluster)
    if members := federation_members():
        where |= Q(job__cluster=settings.LABQUEUE_SLURM_FEDERATION, cluster__in=members)
    return where


def _compared(copied: dict[str, datetime], window: ReportRange) -> Q:
    """Jobs submitted before the window's end and before their own cluster's accounting was last copied."""
    until = (Q(on_cluster=cluster, submitted_at__lt=min(at, window.end)) for cluster, at in copied.items())
    return reduce(operator.or_, until)


def _shown(rows, make) -> list[Difference | None]:
    """At most DIFFERENCES_SHOWN differences of one kind, then None if there were more."""
    found = [make(row) for row in rows[: DIFFERENCES_SHOWN + 1]]
    return found[:DIFFERENCES_SHOWN] + ([None] if len(found) > DIFFERENCES_SHOWN else [])


def _outside_the_portal(*, course: Course, window: ReportRange) -> list[Difference | None]:
    records = (
        usage_records_in_range(window=window, accounts=[course.slurm_account])
        .exclude(job__assignment__course=course)
        .select_related("job__assignment__course")
        .order_by("submitted_at", "slurm_job_id", "cluster")
    )

    def make(record: UsageRecord) -> Difference:
        if record.job is None:
            cause = f"On the course account but not submitted through the portal (job name “{record.job_name}”)."
        else:
            cause = f"Submitted through the portal for another course, {record.job.assignment.course}."
        return Difference("outside", record.slurm_job_id, record.user, cause, cluster=record.cluster)

    return _shown(records, make)


def _unknown_to_slurm(*, portal_jobs: QuerySet) -> list[Difference | None]:
    has_record = UsageRecord.objects.filter(
        _where_sent(OuterRef("on_cluster")), job=OuterRef("pk"), slurm_job_id=OuterRef("slurm_job_id")
    )
    jobs = portal_jobs.filter(~Exists(has_record)).order_by("submitted_at", "pk")

    def make(job: Job) -> Difference:
        cause = f"The portal sent it to Slurm as job {job.slurm_job_id}, but Slurm's accounting has no record of it."
        return Difference("missing", job.slurm_job_id, job.run_as, cause, job.uuid, job.on_cluster)

    return _shown(jobs, make)


def _disagreements(*, course: Course, window: ReportRange) -> list[Difference | None]:
    records = (
        usage_records_in_range(window=window)
        .filter(job__assignment__course=course)
        .annotate(expected=expected_outcome())
        .annotate(sent_to=cluster_named("job__cluster"))
        .filter(
            ~Q(slurm_job_id=F("job__slurm_job_id"))
            | ~_where_sent(F("sent_to"))
            | ~Q(account=F("job__account"))
            | ~Q(gpus=F("job__gpus"))
            | (Q(expected="live") & ~Q(job__status__in=[Status.PENDING, Status.RUNNING]))
            | (~Q(expected="live") & ~Q(job__status=F("expected")))
            | (Q(job__elapsed_seconds__isnull=False) & ~Q(elapsed_seconds=F("job__elapsed_seconds")))
        )
        .select_related("job")
        .order_by("submitted_at", "slurm_job_id", "cluster")
    )
    return _shown(
        records,
        lambda record: Difference(
            "disagrees", record.slurm_job_id, record.user, _disagreement(record), record.job.uuid, record.cluster
        ),
    )


def _disagreement(record: UsageRecord) -> str:
    job = record.job
    causes = []
    if record.slurm_job_id != job.slurm_job_id:
        causes.append(
            f"A second Slurm job carries this portal job's name; the portal tracks job {job.slurm_job_id or 'none'}."
        )
    if record.cluster != record.sent_to and not (is_federated(job.cluster) and record.cluster in federation_members()):
        causes.append(f"Slurm ran it on {record.cluster}; the portal sent it to {record.sent_to}.")
    if record.account != job.account:
        causes.append(f"Slurm charged account {record.account}; the portal asked for {job.account}.")
    if record.gpus != job.gpus:
        causes.append(f"Slurm allocated {record.gpus} GPU(s); the portal asked for {job.gpus}.")
    if record.expected == "live" and job.status not in (Status.PENDING, Status.RUNNING):
        causes.append(f"Slurm's copy still says {record.state}; the portal says {job.get_status_display().lower()}.")
    elif record.expected != "live" and job.status != record.expected:
        causes.append(f"Slurm says {record.state}; the portal says {job.get_status_display().lower()}.")
    if job.elapsed_seconds is not None and job.elapsed_seconds != record.elapsed_seconds:
        causes.append(f"Slurm says it ran {record.elapsed_seconds} s; the portal says {job.elapsed_seconds} s.")
    return " ".join(causes)
