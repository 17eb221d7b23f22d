"""Plain-language words for what Slurm says about a job."""

from jobs.models import Job, Status

PENDING_REASONS = {
    "Priority": "Other jobs are ahead of yours in the queue.",
    "Resources": "Your job is next, waiting for enough GPUs or CPUs to become free.",
    "None": "The scheduler has not looked at your job yet; this usually takes a few seconds.",
    "JobHeldUser": "The job is on hold.",
    "JobHeldAdmin": "An administrator put the job on hold.",
    "ReqNodeNotAvail": "The nodes your job needs are down or reserved right now.",
    "Reservation": "Your job is waiting for its reserved lab time to start.",
    "BeginTime": "Your job is waiting for its start time.",
    "Dependency": "Your job is waiting for another job to finish.",
    "PartitionTimeLimit": "Your job asks for more time than the partition allows; it cannot start.",
    "DependencyNeverSatisfied": "Your job depends on a job that failed; it can never start.",
}
PREFIXES = {
    "AssocGrp": "Your course has reached its shared limit; the job starts when classmates' jobs finish.",
    "AssocMax": "You have reached your own limit for this course; the job starts when one of yours ends.",
    "QOSMax": "You have reached a per-user limit; the job starts when one of yours ends.",
    "QOSGrp": "The shared limit of this queue is reached; the job starts when others finish.",
}


def pending_text(reason: str) -> str:
    reason = reason or "None"
    if "Minutes" in reason:
        return "Your course's GPU-time budget is used up, so Slurm will not start the job."
    for key, text in PENDING_REASONS.items():
        if reason.startswith(key):
            return text
    for prefix, text in PREFIXES.items():
        if reason.startswith(prefix):
            return text
    return f"Slurm says the job is waiting because of: {reason}."


def status_text(job: Job) -> str:
    """One sentence for the job page: what is happening now."""
    if job.status == Status.PENDING:
        where = f" Position {job.queue_position} in the queue." if job.queue_position else ""
        return pending_text(job.reason) + where
    if job.status == Status.QUEUED:
        return job.message or "Your job is saved and will be sent to the cluster in a moment."
    if job.status == Status.SUBMITTING:
        return "Your job is being sent to the cluster."
    if job.status == Status.RUNNING:
        return "Your job is running." + (" A cancel was requested." if job.cancel_requested else "")
    if job.status == Status.COMPLETED:
        return "Your job finished successfully."
    if job.status == Status.CANCELLED:
        return "The job was cancelled."
    if job.status == Status.REJECTED:
        return f"The cluster refused this job: {job.message}"
    signal = f", signal {job.exit_signal}" if job.exit_signal else ""
    return f"The job ended with Slurm state {job.slurm_state} (exit code {job.exit_code}{signal})."
