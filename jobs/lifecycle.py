"""The one way a job changes status, for both sides: web requests (jobs.services: cancel) and the worker
(jobs.dispatch: sending, the status sync, accounting). Every change is a compare-and-set on the status that
was read, listed in jobs.models.TRANSITIONS, and commits together with its JobEvent, so a duplicated or
replayed task is harmless.
"""

from django.db import connection, transaction
from django.db.models import QuerySet, sql
from django.utils import timezone

from jobs.checks import check_enqueue_on_commit
from jobs.models import TRANSITIONS, Job, JobEvent
from jobs.notifications import job_notify_on_commit


def job_transition(*, job: Job, to: str, cause: str, actor=None, **fields) -> bool:
    """Move a job to `to` if it is still in the status we read (compare-and-set).

    Returns False, changing nothing, when another worker got there first or the
    transition is not in the table: a duplicated or replayed task is harmless.
    The status change and its JobEvent commit together or not at all.
    """
    if to not in TRANSITIONS[job.status]:
        return False
    now = timezone.now()
    claimed = Job.objects.filter(pk=job.pk, status=job.status)
    event = JobEvent(job=job, at=now, from_status=job.status, to_status=to, cause=cause, actor=actor)
    if connection.vendor == "postgresql":
        if not _update_with_event(claimed, {"status": to, "updated_at": now, **fields}, event=event):
            return False
    else:
        with transaction.atomic():
            if not claimed.update(status=to, updated_at=now, **fields):
                return False
            event.save()
    job.status = to
    for name, value in fields.items():
        setattr(job, name, value)
    job_notify_on_commit(job=job, to=to)  # a mail to the student, if they asked for one
    check_enqueue_on_commit(job=job, to=to)  # the assignment's check of a completed job, if it has one
    return True


def _update_with_event(claimed: QuerySet[Job], values: dict, *, event: JobEvent) -> bool:
    """The compare-and-set UPDATE and, only when it matched, the INSERT of its JobEvent, as ONE statement
    (PostgreSQL's data-modifying WITH): atomic without a transaction of its own, one round trip where
    BEGIN, UPDATE, INSERT, COMMIT took four. A worker sending a burst of jobs makes two per job."""
    query = claimed.query.chain(sql.UpdateQuery)
    query.add_update_values(values)
    update_sql, update_params = query.get_compiler(claimed.db).as_sql()
    fields = [JobEvent._meta.get_field(name) for name in ("at", "from_status", "to_status", "cause", "actor")]
    columns = [field.column for field in fields]
    event_values = [field.get_db_prep_save(getattr(event, field.attname), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH moved AS ({update_sql} RETURNING id) "
            f"INSERT INTO {JobEvent._meta.db_table} (job_id, {', '.join(columns)}) "
            f"SELECT id, {', '.join(['%s'] * len(columns))} FROM moved",
            [*update_params, *event_values],
        )
        return cursor.rowcount == 1
