"""Send the worker's job tasks by name.

Named, not imported: jobs.tasks imports the services and the dispatch, so neither may import it back.
The task is looked up in the Celery app's registry (not `send_task`), so it behaves as any task
`.delay()` does, eager mode included.
"""

from portal.celery import app


def job_dispatch_enqueue(job_id: int) -> None:
    """Ask the worker to send the job to Slurm (the `job_dispatch` task)."""
    app.tasks["jobs.tasks.job_dispatch"].delay(job_id)


def job_scancel_enqueue(job_id: int) -> None:
    """Ask the worker to cancel the job in Slurm (the `job_scancel` task)."""
    app.tasks["jobs.tasks.job_scancel"].delay(job_id)
