"""Send the worker's job tasks by name.

Named, not imported: jobs.tasks imports the services and the dispatch, so neither may import it back.
The task is looked up in the Celery app's registry (not `send_task`), so it behaves as any task
`.delay()` does, eager mode included.

The broker may be down when a job is saved. The job is safe in the database either way: a task that
could not be sent marks the job (`enqueue_failed`), its page says it is saved and will be sent, and
the worker's periodic sweep (jobs.dispatch.jobs_requeue_stale) sends it again as soon as the broker
answers, without waiting for the job to look stale. The operator reads one ERROR per outage, not one per job.
"""

import logging

from kombu.exceptions import OperationalError

from jobs.models import Job, Status
from portal.celery import app
from portal.logs import broker_outage

log = logging.getLogger(__name__)

SAVED_NOT_SENT = (
    "Your job is saved. The portal could not hand it to its worker just now; it will be sent to the "
    "cluster automatically as soon as it can. There is nothing you need to do."
)


def job_dispatch_enqueue(job_id: int) -> None:
    """Ask the worker to send the job to Slurm (the `job_dispatch` task)."""
    if _send("jobs.tasks.job_dispatch", job_id):
        return
    Job.objects.filter(pk=job_id, status=Status.QUEUED).update(message=SAVED_NOT_SENT)


def job_scancel_enqueue(job_id: int) -> None:
    """Ask the worker to cancel the job in Slurm (the `job_scancel` task)."""
    _send("jobs.tasks.job_scancel", job_id)


def _send(task: str, job_id: int) -> bool:
    try:
        app.tasks[task].delay(job_id)
    except OperationalError as error:  # kombu's wrapper for "the broker did not answer"
        # Once per outage at ERROR; during a burst the jobs after the first are one INFO line each. The next
        # task this process sends ends the outage with one INFO line (portal.celery, portal.logs.broker_reached).
        level = logging.ERROR if broker_outage.begin() else logging.INFO
        log.log(
            level, "Could not send %s for job %s (the sweep sends it when the broker is back): %s", task, job_id, error
        )
        Job.objects.filter(pk=job_id).update(enqueue_failed=True)
        return False
    return True
