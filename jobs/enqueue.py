"""Send the worker's job tasks by name.

Named, not imported: jobs.tasks imports the services and the dispatch, so neither may import it back.
"""

from portal.celery import app


def job_dispatch_enqueue(job_id: int) -> None:
    """Ask the worker to send the job to Slurm (the `job_dispatch` task)."""
    app.send_task("jobs.tasks.job_dispatch", args=[job_id])


def job_scancel_enqueue(job_id: int) -> None:
    """Ask the worker to cancel the job in Slurm (the `job_scancel` task)."""
    app.send_task("jobs.tasks.job_scancel", args=[job_id])
