"""Worker side of the job lifecycle: everything that runs a Slurm command for a job.

Only Celery (jobs.tasks) and tests call these; a web request never does. Each status change goes
through lifecycle.job_transition (compare-and-set), so a duplicated or replayed task is harmless.
"""

import dataclasses
import logging
import os
import socket
from datetime import datetime, timedelta
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

import slurm
from clusterpolicy.selectors import lab_reservation_for, lab_reservations_over
from courses.clusters import accounting_clusters, cluster_name, is_federated, lab_cluster, slurm_cluster
from courses.scripting import SCRIPT_NAME
from courses.selectors import course_role
from jobs.checks import checks_finish, checks_follow_queue, checks_in_slurm
from jobs.enqueue import job_dispatch_enqueue, job_scancel_enqueue
from jobs.explanations import CLUSTER_SILENT, explain
from jobs.lifecycle import job_transition
from jobs.models import ACTIVE_IN_SLURM, FINISHED_SLURM, Heartbeat, Job, JobEvent, Status, cluster_heartbeat_name
from jobs.selectors import job_starter_files
from jobs.staging import staging_dir
from jobs.workdir import WorkdirError, WorkdirUnavailable, workdir_submit
from portal.identity import netid_refusal
from portal.logs import job_logging
from slurm import reservations, states

log = logging.getLogger(__name__)


def job_dispatch(*, job_id: int) -> None:
    """Send a queued job to Slurm. Raises slurm.SlurmUnavailable or WorkdirUnavailable to be retried."""
    job = Job.objects.select_related("assignment__course", "user").get(pk=job_id)
    with job_logging(job.uuid):  # every log line of this dispatch names the job
        _dispatch(job)


def _dispatch(job: Job) -> None:
    if job.status != Status.QUEUED:
        return
    first_attempt = not job.submit_attempts
    claim = {"dispatch_owner": _this_process()}
    if first_attempt:
        # The usual case, read before claiming: what the claim itself records (the attempt, so a dispatch
        # interrupted after sbatch looks the job up by name next time; the lab's reservation) and whether the
        # job may run at all. A retried dispatch reads them after finding Slurm does not have the job yet.
        refusal = _last_line_of_defence(job)
        files, digests = _job_files(job) if not refusal else ([], {})
        claim |= {
            "submit_attempts": 1,
            "reservation": lab_reservation_for(course=job.assignment.course, minutes=job.minutes),
        }
    if not job_transition(job=job, to=Status.SUBMITTING, cause="Sending the job to the cluster.", **claim):
        return
    try:
        if first_attempt:
            slurm_id = _submit(job, refusal=refusal, files=files, digests=digests)
        else:  # a job Slurm already has is adopted whatever changed since
            slurm_id = slurm.find_by_name(job.slurm_name, cluster=slurm_cluster(job.cluster)) or _submit_again(job)
    except slurm.SlurmUnavailable as error:
        job_transition(
            job=job,
            to=Status.QUEUED,
            cause=f"The cluster did not answer ({error}). The portal will try again.",
            message=CLUSTER_SILENT,
        )
        raise
    except WorkdirUnavailable as error:
        _failed_here(job, reason=str(error))
        return
    except SoftTimeLimitExceeded:  # the task's soft time limit cut the sending short (slurm.run stops it)
        _failed_here(job, reason="the worker ran out of time while sending it")
        return
    except (slurm.SlurmRejected, WorkdirError) as error:
        log.info("Job not sent: %s", error)
        job_transition(
            job=job, to=Status.REJECTED, cause=f"Not accepted: {error}", message=str(error), ended_at=timezone.now()
        )
        _store_explanation(job)
        return
    _accepted(job, slurm_id)


def _failed_here(job: Job, *, reason: str) -> None:
    """A sending that failed on the portal's side (called while handling its error, which the traceback shows):
    counted, and retried unless that refused the job."""
    if not local_failure(job, reason=reason):
        raise WorkdirUnavailable(reason)


def _submit(job: Job, *, refusal: str, files: list, digests: dict) -> str:
    """sbatch, as the student through the job-directory helper, unless the last line of defence refused."""
    if refusal:
        raise WorkdirError(refusal)
    return workdir_submit(job_spec(job), script=job.script, files=files, digests=digests)


def _submit_again(job: Job) -> str:
    """A later dispatch of a job Slurm does not have: checked again and counted as another attempt."""
    refusal = _last_line_of_defence(job)
    files, digests = _job_files(job) if not refusal else ([], {})
    if not refusal:
        job.reservation = lab_reservation_for(course=job.assignment.course, minutes=job.minutes)
        Job.objects.filter(pk=job.pk).update(submit_attempts=F("submit_attempts") + 1, reservation=job.reservation)
    return _submit(job, refusal=refusal, files=files, digests=digests)


def _accepted(job: Job, slurm_id: str) -> None:
    log.info("Job accepted by Slurm as job %s", slurm_id)
    job_transition(
        job=job,
        to=Status.PENDING,
        cause=f"Accepted by Slurm as job {slurm_id}."
        + (f" It runs in the lab session's reservation {job.reservation}." if job.reservation else ""),
        slurm_job_id=slurm_id,
        slurm_state=states.PENDING,
        submitted_at=timezone.now(),
        message="",
    )
    if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
        job_scancel_enqueue(job.pk)


def job_spec(job: Job) -> slurm.JobSpec:
    """What sbatch is asked for this job: its script, account, partition, name, directory and logs."""
    workdir = Path(job.workdir)
    return slurm.JobSpec(
        script_path=str(workdir / SCRIPT_NAME),
        run_as=job.run_as,
        account=job.account,
        partition=job.partition,
        job_name=job.slurm_name,
        workdir=job.workdir,
        stdout=str(workdir / job.stdout_name),
        stderr=str(workdir / job.stderr_name),
        reservation=job.reservation,
        cluster=_sent_to(job),
        # In a lab the site's lab QOS (it may preempt research work, README "Classroom priority"), else the course's.
        qos=(settings.LABQUEUE_LAB_QOS or job.qos) if job.reservation else job.qos,
    )


def _sent_to(job: Job) -> str:
    """The -M of the job's sbatch (courses.clusters.slurm_cluster). A lab session's job carries --reservation, which
    exists on one cluster only: a federated course's lab job is sent to the cluster of its lab, the own one
    (courses.clusters.lab_cluster), kept simple rather than finding where a reservation is."""
    return slurm_cluster(lab_cluster(job.cluster) if job.reservation else job.cluster)


def _last_line_of_defence(job: Job) -> str:
    """Why a job saved earlier must not run now, checked again just before anything runs as the student
    (the web side checked when it was saved): a cluster account the portal must never become (root, a
    system account, the deny list), a student dropped from the course since."""
    refusal = netid_refusal(job.run_as)
    if refusal:
        return refusal
    if course_role(user=job.user, course=job.assignment.course) is None:
        return (
            f"You are no longer enrolled in {job.assignment.course}, so this job was not sent. If this is a "
            "mistake, ask the course's instructor to add you to the roster again, then press Retry."
        )
    return ""


def local_failure(job: Job, *, reason: str) -> bool:
    """Count a dispatch that failed on the portal's side. The job goes back to the queue to be sent
    again, or, after LABQUEUE_DISPATCH_LOCAL_FAILURES of them, is refused with the reason. True when
    refused."""
    Job.objects.filter(pk=job.pk).update(local_failures=F("local_failures") + 1)
    failures = Job.objects.values_list("local_failures", flat=True).get(pk=job.pk)
    if failures < settings.LABQUEUE_DISPATCH_LOCAL_FAILURES:
        job_transition(
            job=job,
            to=Status.QUEUED,
            cause=f"Sending failed on the portal's side ({reason}); it will be sent again.",
            message="The portal could not send your job yet; it will try again automatically.",
        )
        return False
    log.error("Job %s refused after %s local dispatch failures, the last: %s", job.pk, failures, reason)
    job_transition(
        job=job,
        to=Status.REJECTED,
        cause=f"Refused after {failures} failures on the portal's side; the last: {reason}",
        message=f"The portal tried {failures} times to send your job to the cluster and failed each time "
        f"({reason}). This is a fault on the portal's side, not in your job, and the operators can see it "
        "in the worker's log. Press Retry later; if it fails again, tell your TA.",
        ended_at=timezone.now(),
    )
    _store_explanation(job)
    return True


def _job_files(job: Job) -> tuple[list[tuple[str, Path]], dict[Path, str]]:
    """The files for the job's directory: the starter files of the version the job records (never the ones
    the assignment has now), then the student's staged uploads; and the SHA-256 each starter file's bytes
    must still have (workdir_submit refuses the job otherwise)."""
    starters = [(starter.name, Path(starter.file.path), starter.sha256) for starter in job_starter_files(job=job)]
    files = [(name, path) for name, path, _ in starters]
    staged = staging_dir(str(job.uuid))
    if staged.is_dir():  # every entry: one that is not a regular file is refused with its name, never skipped
        files += [(path.name, path) for path in sorted(staged.iterdir())]
    return files, {path: sha256 for _, path, sha256 in starters}


def job_scancel(*, job_id: int) -> None:
    """Worker side of cancelling. Slurm's record then arrives through the sync."""
    job = Job.objects.get(pk=job_id)
    if job.slurm_job_id and not job.is_terminal:
        with job_logging(job.uuid):
            slurm.cancel(job.slurm_job_id, run_as=job.run_as, cluster=slurm_cluster(job.cluster))


#: What squeue tells about a job still in the queue (_live_fields).
LIVE_FIELDS = ("slurm_state", "reason", "queue_position", "started_at", "expected_start_at")
#: What a finished job used (slurm.usage), written by _collect_usage.
USAGE_FIELDS = ("cpu_seconds_used", "max_rss_mb", "gpu_util_percent", "gpu_mem_mb", "usage_collected_at")
#: Finished jobs whose usage one cycle reads at most (one sacct); the others wait for the next cycles, newest first.
USAGE_BATCH = 200


def _live_fields(live: slurm.LiveJob) -> dict:
    return {
        "slurm_state": live.state,
        "reason": live.reason,  # the adapter already gives "" for Slurm's "None"
        "queue_position": live.queue_position,
        "started_at": live.start_time if states.is_running(live.state) else None,
        # squeue's %S of a PENDING job is Slurm's expected start (the adapter gives None for N/A).
        "expected_start_at": live.start_time if live.is_pending else None,
    }


def _final_fields(record: slurm.AcctRecord) -> dict:
    return {
        "cancelled_by": record.cancelled_by,
        "accounting": _record_json(record),
        "slurm_state": record.state,
        "reason": record.reason,
        "queue_position": None,
        "expected_start_at": None,
        "exit_code": record.exit_code,
        "exit_signal": record.signal,
        "started_at": record.start,
        "ended_at": record.end,
        "elapsed_seconds": record.elapsed_seconds,
    }


def _record_json(record: slurm.AcctRecord) -> dict:
    data = dataclasses.asdict(record)
    return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in data.items()}


def _final_status(state: str) -> Status | None:
    """The portal status a Slurm state ends a job in (slurm.states.final_outcome), or None while it is live."""
    outcome = states.final_outcome(state)
    return Status(outcome) if outcome is not None else None


def jobs_sync() -> int:
    """Bring every active job up to date with at most three Slurm commands per cluster, however many jobs: one
    squeue for the live ones, one sacct for those that left the queue or finished, and one sacct for what
    finished jobs used (_collect_usage). Each other cluster (LABQUEUE_SLURM_OTHER_CLUSTERS) is asked every cycle,
    so its courses' pages know when it stops answering; one that does not answer holds up only its own jobs.
    A federated course's jobs are found by their federation-wide id in the same squeues (no command more, see
    _follow_federation). Raises SlurmUnavailable when the portal's own cluster did not answer (after the others
    were followed)."""
    active = list(Job.objects.filter(status__in=ACTIVE_IN_SLURM).exclude(slurm_job_id=""))
    check_runs = checks_in_slurm()  # assignments' checks ride along in the same two calls (jobs.checks)
    federated = [job for job in active if is_federated(job.cluster)]
    federated_runs = [run for run in check_runs if is_federated(run.job.cluster)]
    clusters = {job.cluster for job in active} | {run.job.cluster for run in check_runs}
    if federated or federated_runs:
        clusters.add("")  # every member's queue is needed; the other clusters are asked anyway
    queues, silent_here = {}, None
    for cluster in sorted(
        {name for name in clusters if not is_federated(name)} | set(settings.LABQUEUE_SLURM_OTHER_CLUSTERS)
    ):
        try:
            _follow_cluster(cluster, active, check_runs, queues)
        except slurm.SlurmUnavailable as error:
            if not cluster:
                silent_here = error
                continue
            log.warning("The cluster %s did not answer; its jobs wait for the next cycle: %s", cluster, error)
    if federated or federated_runs:
        _follow_federation(federated, federated_runs, queues)
    _collect_usage()
    if silent_here is not None:
        raise silent_here
    return len(active)


def _follow_cluster(cluster: str, active: list[Job], check_runs: list, queues: dict[str, dict]) -> None:
    """One squeue of the cluster (kept in `queues` for the federated jobs), then its own jobs and checks followed;
    an other cluster that answered gets its heartbeat."""
    queues[cluster] = slurm.queue(cluster=slurm_cluster(cluster))
    _follow_slurm(
        [job for job in active if job.cluster == cluster],
        [run for run in check_runs if run.job.cluster == cluster],
        live=queues[cluster],
        cluster=cluster,
    )
    if cluster:
        heartbeat(cluster_heartbeat_name(cluster))


def _follow_federation(active: list[Job], check_runs: list, queues: dict[str, dict]) -> None:
    """A federated job has one id on every cluster of the federation (Slurm's cluster id << 26 + local id): it is
    looked up in every member's queue (their REVOKED copies already left out by the adapter), a running row first,
    and the cluster of that row is where it started. While a member has not answered, the federated jobs wait for
    the next cycle: a job missing from the answers could be running on the silent cluster, not finished."""
    members = ["", *settings.LABQUEUE_SLURM_OTHER_CLUSTERS]  # as Job.cluster names them; from settings
    if silent := [cluster_name(cluster) for cluster in members if cluster not in queues]:
        log.warning("Federated jobs wait for the next cycle: %s did not answer.", ", ".join(silent))
        return
    live, ran_on = federation_rows(queues, members)
    try:
        _follow_slurm(active, check_runs, live=live, cluster=settings.LABQUEUE_SLURM_FEDERATION, ran_on=ran_on)
    except slurm.SlurmUnavailable as error:
        log.warning("The federation's accounting did not answer; its jobs wait for the next cycle: %s", error)


def federation_rows(queues: dict[str, dict], members: list[str]) -> tuple[dict, dict]:
    """Each job id's row among the members' queues (in the order given) and the cluster of that row: a running row
    first, else the first member's. A job that has just started on one member can still be waiting on another in
    the same cycle (the first member's copy is revoked a moment later); where it runs is where it started."""
    live, ran_on = {}, {}
    for cluster in members:
        for job_id, entry in queues[cluster].items():
            if job_id not in live or states.is_running(entry.state):
                live[job_id], ran_on[job_id] = entry, cluster_name(cluster)
    return live, ran_on


def _follow_slurm(
    active: list[Job], check_runs: list, *, live: dict, cluster: str, ran_on: dict[str, str] | None = None
) -> None:
    """Follow the cluster's active jobs and checks in its squeue (`live`), then one sacct for those that left it.
    A job that runs records where (`ran_on`, else the cluster asked)."""
    now = timezone.now()
    finished, changed, unchanged = [], [], []
    for job in active:
        entry = live.get(job.slurm_job_id)
        if entry is None or not states.is_live(entry.state):
            finished.append(job)
            continue
        target = Status.RUNNING if states.is_running(entry.state) else Status.PENDING
        fields = {**_live_fields(entry), "left_queue_at": None}
        if target == Status.RUNNING:
            fields["ran_on"] = (ran_on or {}).get(job.slurm_job_id) or cluster_name(cluster)
        if target != job.status:
            job_transition(job=job, to=target, cause=f"Slurm reports {entry.state}.", checked_at=now, **fields)
        elif any(getattr(job, name) != value for name, value in fields.items()):
            for name, value in fields.items():
                setattr(job, name, value)
            job.checked_at = now
            changed.append(job)
        else:
            unchanged.append(job.pk)
    # What did not change costs one statement however many jobs; what changed, one per batch.
    Job.objects.filter(pk__in=unchanged).update(checked_at=now)
    Job.objects.bulk_update(changed, [*LIVE_FIELDS, "ran_on", "left_queue_at", "checked_at"], batch_size=500)
    checks_left = checks_follow_queue(check_runs, live)
    if finished or checks_left:
        _follow_accounting(finished, checks_left, cluster=cluster, now=now)


def _follow_accounting(finished: list[Job], checks_left: list, *, cluster: str, now: datetime) -> None:
    """Left the queue: finished, but how is known only from sacct. Until it answers the job is neither "running"
    nor done, and its check time stays old so the page says so. A federated job's sacct reads every member's
    records (-M lab,lab2); the adapter leaves out the origin's REVOKED copy, so the record is the one of the
    cluster where it ran."""
    Job.objects.filter(pk__in=[job.pk for job in finished], left_queue_at=None).update(left_queue_at=now)
    job_ids = [job.slurm_job_id for job in finished + checks_left]
    records = slurm.accounting(job_ids=job_ids, cluster=accounting_clusters(cluster))
    Job.objects.filter(pk__in=[job.pk for job in finished]).update(checked_at=now)
    for job in finished:
        record = records.get(job.slurm_job_id)
        target = _final_status(record.state) if record else None
        if target is not None:
            cause = f"Slurm's accounting reports {record.state}, exit code {record.exit_code}."
            if job_transition(job=job, to=target, cause=cause, **_final_fields(record)):
                _store_explanation(job)
    checks_finish(checks_left, records)


def _collect_usage() -> None:
    """What finished jobs used, newest first, USAGE_BATCH of them in ONE sacct. A job sacct does not know (purged
    from slurmdbd) is marked collected with nothing; when sacct fails, the next cycle tries again."""
    waiting = list(
        Job.objects.filter(status__in=FINISHED_SLURM, usage_collected_at=None)
        .exclude(slurm_job_id="")
        .order_by(F("ended_at").desc(nulls_last=True))[:USAGE_BATCH]
    )
    if not waiting:
        return
    now = timezone.now()
    collected = []
    for cluster in sorted({job.cluster for job in waiting}):
        jobs = [job for job in waiting if job.cluster == cluster]
        try:
            usage = slurm.job_usage([job.slurm_job_id for job in jobs], cluster=accounting_clusters(cluster))
        except slurm.SlurmError as error:
            log.warning("What %s finished jobs used was not read (%s); the next cycle tries again.", len(jobs), error)
            continue
        for job in jobs:
            figures = usage.get(job.slurm_job_id)
            if figures is not None:
                job.cpu_seconds_used = figures.cpu_seconds
                job.max_rss_mb = figures.max_rss_mb
                job.gpu_util_percent = figures.gpu_util_percent
                job.gpu_mem_mb = figures.gpu_mem_mb
            job.usage_collected_at = now
        collected += jobs
    Job.objects.bulk_update(collected, USAGE_FIELDS, batch_size=500)


def heartbeat(name: str) -> None:
    """Record that a periodic task finished its work now (read by /readyz)."""
    Heartbeat.objects.update_or_create(name=name, defaults={"at": timezone.now()})


def _store_explanation(job: Job) -> None:
    """Remember which explanation a finished job got, for the TAs' failure counts."""
    explanation = explain(job)
    if explanation is not None:
        Job.objects.filter(pk=job.pk).update(explanation_key=explanation.key)


def _this_process() -> str:
    """Who is sending a job: host and process id, so a sweep on the same host can tell it died."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _dead_here(owner: str) -> bool:
    """The owner is a process of this host that no longer exists (a worker that was killed)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another account's
    return False


def jobs_requeue_stale() -> None:
    """Re-send jobs whose submit task was lost (broker down when it was sent, broker restart, worker
    crash). A job whose task could not be sent is sent again at once; one whose sending process died on
    this host once the helper and sbatch it started have surely given up (LABQUEUE_JOBDIR_TIMEOUT, the limit
    of that call); any other once it has waited LABQUEUE_RESUBMIT_AFTER_SECONDS."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.LABQUEUE_RESUBMIT_AFTER_SECONDS)
    # A dead sender's helper and sbatch may live on (the worker may not signal the student's processes):
    # wait for them to have given up (the runner's limit for that call) before asking Slurm by name and
    # sending again.
    grace = now - timedelta(seconds=settings.LABQUEUE_JOBDIR_TIMEOUT)
    submitting = Job.objects.filter(status=Status.SUBMITTING, updated_at__lt=grace)
    stuck = [job for job in submitting if job.updated_at < cutoff or _dead_here(job.dispatch_owner)]
    interrupted = [
        job.pk
        for job in stuck
        if not local_failure(job, reason="the submission was interrupted: the worker stopped while sending it")
    ]
    stale = list(
        Job.objects.filter(Q(updated_at__lt=cutoff) | Q(enqueue_failed=True), status=Status.QUEUED)
        .exclude(pk__in=interrupted)
        .values_list("pk", flat=True)
    )
    for pk in interrupted + stale:  # a send that fails again marks the job again (jobs.enqueue)
        Job.objects.filter(pk=pk).update(updated_at=timezone.now(), enqueue_failed=False)
        job_dispatch_enqueue(pk)
    cancels = Job.objects.filter(enqueue_failed=True, cancel_requested=True, status__in=ACTIVE_IN_SLURM)
    for pk in list(cancels.values_list("pk", flat=True)):
        Job.objects.filter(pk=pk).update(enqueue_failed=False)
        job_scancel_enqueue(pk)


def jobs_leave_ended_labs() -> int:
    """Portal jobs still waiting for the reservation of a lab that ended or was cancelled go to the
    normal queue (before the reservation can be removed: Slurm refuses while jobs wait for it).

    Runs after clusterpolicy.labs.labs_tick (the `labs_tick` task); a job it has moved no longer names
    the reservation, so a second run finds nothing.
    """
    removed = lab_reservations_over().values("reservation_name")
    waiting = Job.objects.filter(status=Status.PENDING, reservation__in=removed).exclude(slurm_job_id="")
    moved = 0
    for job in waiting:
        reservations.job_reservation_clear(job.slurm_job_id, cluster=slurm_cluster(lab_cluster(job.cluster)))
        Job.objects.filter(pk=job.pk).update(reservation="")
        JobEvent.objects.create(
            job=job, cause="The lab session ended before the job started; it now waits in the normal queue."
        )
        moved += 1
    return moved


def jobs_release_lab_holds() -> int:
    """Release portal jobs the portal already moved out of an ended lab that Slurm held all the same
    (RESV_DEL_HOLD: the reservation's deletion raced the move); the sync recorded the state. One Slurm call per
    cluster with such jobs."""
    held = Job.objects.filter(status=Status.PENDING, reservation="", slurm_state="RESV_DEL_HOLD").exclude(
        slurm_job_id=""
    )
    on_cluster: dict[str, list[str]] = {}
    for cluster, job_id in held.values_list("cluster", "slurm_job_id"):
        on_cluster.setdefault(cluster, []).append(job_id)
    for cluster, ids in on_cluster.items():
        reservations.jobs_release(ids, cluster=slurm_cluster(lab_cluster(cluster)))
    return sum(map(len, on_cluster.values()))
