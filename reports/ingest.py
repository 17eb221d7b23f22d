"""Copy Slurm's accounting into UsageRecord, incrementally and idempotently.

One cycle is ONE sacct call for the window [mark - overlap, now]; rows are upserted by
(cluster, slurm job id, submit time). The mark (AccountingCursor.ingested_until) moves
only after the rows are saved, so a cycle that finds slurmdbd down loses nothing: the next
one asks for the whole gap again. Re-ingesting a window rewrites the same values.
"""

import dataclasses
import logging
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

import slurm
from jobs.models import Job
from reports.models import AccountingCursor, UsageRecord
from reports.pseudonyms import forgotten_netids

log = logging.getLogger(__name__)

PORTAL_NAME_PREFIX = "lq-"
#: Fields an ingest may rewrite; `ingested_at` keeps the time the row was first written.
UPDATED_FIELDS = [
    "job",
    "job_name",
    "user",
    "account",
    "partition",
    "qos",
    "reservation",
    "state",
    "exit_code",
    "exit_signal",
    "started_at",
    "ended_at",
    "elapsed_seconds",
    "gpus",
    "cpus",
    "mem_mb",
    "billing",
]


@dataclass(frozen=True)
class IngestResult:
    cluster: str
    since: datetime
    until: datetime
    records: int
    seconds: float
    accounts: frozenset[str] = frozenset()  # the Slurm accounts of the records copied


#: Exactly the names the portal gives its jobs (jobs.models.Job.slurm_name); uuid.UUID alone would also
#: take braces, "urn:uuid:", capitals and missing hyphens.
PORTAL_NAME_RE = re.compile(re.escape(PORTAL_NAME_PREFIX) + r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def portal_job_uuid(job_name: str) -> uuid.UUID | None:
    """The portal job's UUID from a Slurm job name ``lq-<uuid>``; None for any other name."""
    if not PORTAL_NAME_RE.fullmatch(job_name):
        return None
    return uuid.UUID(job_name[len(PORTAL_NAME_PREFIX) :])


def usage_ingest(*, now: datetime | None = None, other_cluster: str = "") -> IngestResult:
    """One ingest cycle of the portal's own cluster, or of `other_cluster` (one of LABQUEUE_SLURM_OTHER_CLUSTERS,
    through sacct -M), each with its own mark: a record's key is its cluster, job id and submit time, so the same
    job id on two clusters is two records. Raises slurm.SlurmUnavailable (mark unchanged) when slurmdbd does not
    answer."""
    started = time.monotonic()
    cluster = other_cluster or settings.LABQUEUE_SLURM_CLUSTER
    now = now or timezone.now()
    first_since = now - timedelta(days=settings.LABQUEUE_USAGE_FIRST_DAYS)
    cursor, _ = AccountingCursor.objects.get_or_create(cluster=cluster, defaults={"ingested_until": first_since})
    since = cursor.ingested_until - timedelta(seconds=settings.LABQUEUE_USAGE_OVERLAP_SECONDS)
    try:
        # In a federation the own cluster is asked by name too (-M), as the others are: a federated job's record is
        # filed once, under the cluster that ran it (the origin's REVOKED copy is left out by the adapter).
        own = settings.LABQUEUE_SLURM_CLUSTER if settings.LABQUEUE_SLURM_FEDERATION else ""
        records = slurm.accounting(since=since, until=now, cluster=other_cluster or own)
    except slurm.SlurmUnavailable as error:
        AccountingCursor.objects.filter(pk=cursor.pk).update(last_error=str(error), last_error_at=now)
        raise
    with transaction.atomic():
        saved = usage_records_save(cluster=cluster, records=records.values(), now=now)
        # Compare-and-set: a slower, older cycle never moves the mark backwards.
        AccountingCursor.objects.filter(pk=cursor.pk, ingested_until__lt=now).update(ingested_until=now)
        AccountingCursor.objects.filter(pk=cursor.pk).update(last_success_at=now, last_error="")
    accounts = frozenset(record.account for record in records.values())
    result = IngestResult(cluster, since, now, saved, time.monotonic() - started, accounts)
    log.info("Usage ingest %s: %d records for %s..%s in %.2fs", cluster, saved, since, now, result.seconds)
    return result


def usage_records_save(*, cluster: str, records: Iterable["slurm.AcctRecord"], now: datetime) -> int:
    """Upsert allocation records; link each to its portal job by the lq-<uuid> name. Three queries per batch.

    Anyone can give a job any name, so a record is linked only when it ran as the portal job's cluster
    user: another user's job named after a portal job stays unlinked (outside the portal). A record of a
    person the portal forgot (ops.forget) is filed under their pseudonym, as their older records are."""
    records = [record for record in records if record.submit is not None]
    forgotten = forgotten_netids({record.user for record in records})
    if forgotten:
        records = [dataclasses.replace(record, user=forgotten.get(record.user, record.user)) for record in records]
    uuids = {u for u in (portal_job_uuid(record.name) for record in records) if u}
    jobs = Job.objects.filter(uuid__in=uuids).values_list("uuid", "pk", "run_as") if uuids else []
    job_ids = {(job_uuid, run_as): pk for job_uuid, pk, run_as in jobs}
    rows = [
        UsageRecord(
            cluster=cluster,
            slurm_job_id=record.job_id,
            submitted_at=record.submit,
            job_id=job_ids.get((portal_job_uuid(record.name), record.user)),
            job_name=record.name[:200],
            user=record.user,
            account=record.account,
            partition=record.partition,
            qos=record.qos,
            reservation=record.reservation,
            state=record.state,
            exit_code=record.exit_code,
            exit_signal=record.signal,
            started_at=record.start,
            ended_at=record.end,
            elapsed_seconds=record.elapsed_seconds,
            gpus=record.gpus,
            cpus=record.cpus,
            mem_mb=record.mem_mb,
            billing=record.billing,
            ingested_at=now,
        )
        for record in records
    ]
    UsageRecord.objects.bulk_create(
        rows,
        batch_size=2000,
        update_conflicts=True,
        unique_fields=["cluster", "slurm_job_id", "submitted_at"],
        update_fields=UPDATED_FIELDS,
    )
    return len(rows)
