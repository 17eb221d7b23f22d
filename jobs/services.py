"""Writes: submitting, dispatching to Slurm, syncing states, cancelling."""

import dataclasses
import logging
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from courses.models import Assignment, Dataset
from courses.policy import resource_problems, running_notice, submission_problems
from courses.scripting import Resources, render_script
from jobs import slurm
from jobs.explanations import explain
from jobs.labs import lab_reservation_for
from jobs.models import ACTIVE_IN_SLURM, TRANSITIONS, Job, JobEvent, JobNote, Status
from jobs.policy_sync import course_qos
from jobs.selectors import student_gpu_hours, student_live_jobs
from jobs.workdir import WorkdirError, job_workdir, staging_clear, staging_dir, workdir_prepare

log = logging.getLogger(__name__)

RUNNING_STATES = {"CONFIGURING", "RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING", "SUSPENDED"}
PENDING_STATES = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"}


def job_transition(*, job: Job, to: str, cause: str, actor=None, **fields) -> bool:
    """Move a job to `to` if it is still in the status we read (compare-and-set).

    Returns False, changing nothing, when another worker got there first or the
    transition is not in the table: a duplicated or replayed task is harmless.
    """
    if to not in TRANSITIONS[job.status]:
        return False
    now = timezone.now()
    updated = Job.objects.filter(pk=job.pk, status=job.status).update(status=to, updated_at=now, **fields)
    if not updated:
        return False
    JobEvent.objects.create(job=job, from_status=job.status, to_status=to, cause=cause, actor=actor)
    job.status = to
    for name, value in fields.items():
        setattr(job, name, value)
    return True


@transaction.atomic
def job_submit(
    *,
    user,
    assignment: Assignment,
    values: dict,
    resources: Resources,
    dataset: Dataset | None = None,
    uploads: list[UploadedFile] = (),
    retry_of: Job | None = None,
    actor=None,
) -> Job:
    """Record a job request and send it to the cluster once the transaction commits.

    `actor` is who pressed the button when it is not the student (a TA retrying for them).
    """
    actor = actor or user
    if not user.netid:
        raise ValidationError(
            "Your portal account is not linked to a cluster username yet, so jobs cannot run as you. "
            "Ask the course staff to add your cluster username."
        )
    course = assignment.course
    problems = resource_problems(course=course, resources=resources)
    if problems:
        raise ValidationError(list(problems.values()))
    live = student_live_jobs(user=user, course=course)
    refusals = submission_problems(
        course=course, resources=resources, active_jobs=live, gpu_hours_used=student_gpu_hours(user=user, course=course)
    )
    if refusals:
        raise ValidationError(refusals)
    if dataset is not None and not assignment.datasets.filter(pk=dataset.pk).exists():
        raise ValidationError("That data set is not approved for this assignment.")
    used = Job.objects.filter(user=user, assignment=assignment).count()
    if assignment.max_attempts and used >= assignment.max_attempts:
        raise ValidationError(
            f"This assignment allows {assignment.max_attempts} attempts per student and "
            f"{used} have been used. Ask your instructor if you need another."
        )
    script = render_script(
        body=assignment.script_template,
        values=values,
        resources=resources,
        dataset_path=dataset.path if dataset else "",
        label=f"{course.code}: {assignment.title}",
    )
    job = Job(user=user, assignment=assignment, run_as=user.netid, parameters=values, dataset=dataset)
    job.gpus, job.cpus, job.mem_mb, job.minutes = resources.gpus, resources.cpus, resources.mem_mb, resources.minutes
    job.account, job.partition, job.script = course.slurm_account, course.partition, script
    job.qos = course_qos(course)
    job.workdir = str(job_workdir(netid=user.netid, job_uuid=str(job.uuid)))
    job.created_by = actor if actor.pk != user.pk else None
    if retry_of is not None:
        job.retry_of, job.attempt = retry_of, retry_of.attempt + 1
    job.save()
    cause = f"Retry of attempt {retry_of.attempt}." if retry_of else "Submitted in the portal."
    if actor.pk != user.pk:
        cause += f" Requested by {actor} on the student's behalf."
    if notice := running_notice(course=course, live_jobs=live):
        cause += f" {notice}"
    JobEvent.objects.create(job=job, to_status=Status.QUEUED, cause=cause, actor=actor)
    _stage_uploads(job, uploads)
    if retry_of is not None:
        _copy_staged(source=retry_of, target=job)
    _enqueue_submit(job)
    return job


def _stage_uploads(job: Job, uploads: list[UploadedFile]) -> None:
    if not uploads:
        return
    folder = staging_dir(str(job.uuid))
    folder.mkdir(parents=True, exist_ok=True)
    for upload in uploads:
        with open(folder / upload.name, "wb") as target:
            for chunk in upload.chunks():
                target.write(chunk)


def _copy_staged(*, source: Job, target: Job) -> None:
    """A retry gets the files the student uploaded for the attempt it retries."""
    staged = staging_dir(str(source.uuid))
    if staged.is_dir():
        shutil.copytree(staged, staging_dir(str(target.uuid)), dirs_exist_ok=True)


@transaction.atomic
def job_retry(*, job: Job, actor, resources: Resources | None = None) -> Job:
    """A new attempt of a failed, cancelled or refused job: same parameters, data set and files;
    resources as given (still within the course's limits). Each attempt is retried at most once,
    so a double click or a replayed POST returns the same new attempt."""
    existing = Job.objects.filter(retry_of=job).first()
    if existing is not None:
        return existing
    if not job.can_retry:
        raise ValidationError("Only a failed, cancelled or refused job can be retried.")
    try:
        with transaction.atomic():
            return job_submit(
                user=job.user, assignment=job.assignment, values=job.parameters, dataset=job.dataset,
                resources=resources or Resources(**job.resources), retry_of=job, actor=actor,
            )  # fmt: skip
    except IntegrityError:
        return Job.objects.get(retry_of=job)


def retry_suggestion(*, job: Job, suggest: dict[str, int]) -> Resources:
    """Resources for a retry: the explanation's suggested factor, kept within the course's limits."""
    course = job.assignment.course
    caps = {"gpus": course.max_gpus_per_job, "cpus": course.max_cpus_per_job,
            "mem_mb": course.max_mem_mb_per_job, "minutes": course.max_minutes_per_job}  # fmt: skip
    values = dict(job.resources)
    for name, factor in suggest.items():
        values[name] = min(caps[name], values[name] * factor) if factor else min(caps[name], values[name])
    return Resources(**values)


@transaction.atomic
def job_note_add(*, job: Job, author, text: str) -> JobNote:
    text = text.strip()
    if not text:
        raise ValidationError("Write something in the note.")
    note = JobNote.objects.create(job=job, author=author, text=text)
    JobEvent.objects.create(job=job, cause="Course staff added a note.", actor=author)
    return note


@transaction.atomic
def job_review(*, job: Job, reviewer) -> None:
    if Job.objects.filter(pk=job.pk, reviewed_at__isnull=True).update(reviewed_at=timezone.now(), reviewed_by=reviewer):
        JobEvent.objects.create(job=job, cause="Marked as reviewed.", actor=reviewer)


def _enqueue_submit(job: Job) -> None:
    from jobs.tasks import submit_job

    transaction.on_commit(lambda: submit_job.delay(job.pk))


def job_dispatch(*, job_id: int) -> None:
    """Send a queued job to Slurm (worker side). Raises slurm.SlurmUnavailable to be retried."""
    job = Job.objects.select_related("assignment__course").get(pk=job_id)
    if job.status != Status.QUEUED:
        return
    if not job_transition(job=job, to=Status.SUBMITTING, cause="Sending the job to the cluster."):
        return
    try:
        slurm_id = slurm.find_by_name(job.slurm_name) if job.submit_attempts else None
        if slurm_id is None:
            script_path = workdir_prepare(
                workdir=job.workdir, netid=job.run_as, script=job.script, files=_job_files(job)
            )
            job.reservation = lab_reservation_for(course=job.assignment.course, minutes=job.minutes)
            Job.objects.filter(pk=job.pk).update(submit_attempts=F("submit_attempts") + 1, reservation=job.reservation)
            slurm_id = slurm.submit(
                slurm.JobSpec(
                    script_path=script_path,
                    run_as=job.run_as,
                    account=job.account,
                    partition=job.partition,
                    job_name=job.slurm_name,
                    workdir=job.workdir,
                    stdout=str(Path(job.workdir) / job.stdout_name),
                    stderr=str(Path(job.workdir) / job.stderr_name),
                    reservation=job.reservation,
                    qos=job.qos,
                )
            )
    except slurm.SlurmUnavailable as error:
        job_transition(
            job=job,
            to=Status.QUEUED,
            cause=f"The cluster did not answer ({error}). The portal will try again.",
            message="The cluster is not answering right now. Your job is saved and the portal "
            "will send it again automatically; there is nothing you need to do.",
        )
        raise
    except (slurm.SlurmRejected, WorkdirError) as error:
        job_transition(
            job=job, to=Status.REJECTED, cause=f"Not accepted: {error}", message=str(error), ended_at=timezone.now()
        )
        _store_explanation(job)
        return
    job_transition(
        job=job,
        to=Status.PENDING,
        cause=f"Accepted by Slurm as job {slurm_id}."
        + (f" It runs in the lab session's reservation {job.reservation}." if job.reservation else ""),
        slurm_job_id=slurm_id,
        slurm_state="PENDING",
        submitted_at=timezone.now(),
        message="",
    )
    if Job.objects.filter(pk=job.pk, cancel_requested=True).exists():
        _enqueue_cancel(job)


def _job_files(job: Job) -> list[tuple[str, Path]]:
    files = [(starter.name, Path(starter.file.path)) for starter in job.assignment.starter_files.all()]
    staged = staging_dir(str(job.uuid))
    if staged.is_dir():
        files += [(path.name, path) for path in sorted(staged.iterdir()) if path.is_file()]
    return files


@transaction.atomic
def job_cancel(*, job: Job, actor) -> None:
    """Cancel a job: at once if Slurm never saw it, otherwise through scancel on the worker."""
    if job.is_terminal:
        raise ValidationError("This job has already finished.")
    if job.status == Status.QUEUED and job_transition(
        job=job,
        to=Status.CANCELLED,
        cause="Cancelled before it reached the cluster.",
        actor=actor,
        ended_at=timezone.now(),
    ):
        staging_clear(str(job.uuid))
        return
    if not Job.objects.filter(pk=job.pk, cancel_requested=False).update(cancel_requested=True):
        return
    job.cancel_requested = True
    JobEvent.objects.create(job=job, cause="Cancel requested.", actor=actor)
    if job.status in ACTIVE_IN_SLURM:
        transaction.on_commit(lambda: _enqueue_cancel(job))


def _enqueue_cancel(job: Job) -> None:
    from jobs.tasks import cancel_job

    cancel_job.delay(job.pk)


def job_scancel(*, job_id: int) -> None:
    """Worker side of cancelling. Slurm's record then arrives through the sync."""
    job = Job.objects.get(pk=job_id)
    if job.slurm_job_id and not job.is_terminal:
        slurm.cancel(job.slurm_job_id, run_as=job.run_as)


def _live_fields(live: "slurm.LiveJob") -> dict:
    return {
        "slurm_state": live.state,
        "reason": "" if live.reason in ("None", "") else live.reason,
        "queue_position": live.queue_position,
        "started_at": live.start_time if live.state in RUNNING_STATES else None,
    }


def _final_fields(record: "slurm.AcctRecord") -> dict:
    return {
        "cancelled_by": record.cancelled_by,
        "accounting": _record_json(record),
        "slurm_state": record.state,
        "reason": "" if record.reason in ("None", "") else record.reason,
        "queue_position": None,
        "exit_code": record.exit_code,
        "exit_signal": record.signal,
        "started_at": record.start,
        "ended_at": record.end,
        "elapsed_seconds": record.elapsed_seconds,
    }


def _record_json(record: "slurm.AcctRecord") -> dict:
    data = dataclasses.asdict(record)
    return {key: value.isoformat() if isinstance(value, datetime) else value for key, value in data.items()}


def final_status(state: str) -> str | None:
    """The portal status for a Slurm state, or None while the job is still live."""
    if state == "COMPLETED":
        return Status.COMPLETED
    if state == "CANCELLED":
        return Status.CANCELLED
    if state in RUNNING_STATES or state in PENDING_STATES:
        return None
    return Status.FAILED


def jobs_sync() -> int:
    """Bring every active job up to date with at most two Slurm commands, however many jobs:
    one squeue for the live ones, one sacct for those that left the queue or finished."""
    active = list(Job.objects.filter(status__in=ACTIVE_IN_SLURM).exclude(slurm_job_id=""))
    if not active:
        return 0
    live = slurm.queue()
    now = timezone.now()
    Job.objects.filter(pk__in=[job.pk for job in active]).update(checked_at=now)
    finished = []
    for job in active:
        entry = live.get(job.slurm_job_id)
        if entry is None or final_status(entry.state) is not None:
            finished.append(job)
            continue
        target = Status.RUNNING if entry.state in RUNNING_STATES else Status.PENDING
        fields = _live_fields(entry)
        if target != job.status:
            job_transition(job=job, to=target, cause=f"Slurm reports {entry.state}.", **fields)
        else:
            Job.objects.filter(pk=job.pk, status=job.status).update(**fields)
    if finished:
        records = slurm.accounting(job_ids=[job.slurm_job_id for job in finished])
        for job in finished:
            record = records.get(job.slurm_job_id)
            target = final_status(record.state) if record else None
            if target is not None:
                cause = f"Slurm's accounting reports {record.state}, exit code {record.exit_code}."
                if job_transition(job=job, to=target, cause=cause, **_final_fields(record)):
                    _store_explanation(job)
    return len(active)


def _store_explanation(job: Job) -> None:
    """Remember which explanation a finished job got, for the TAs' failure counts."""
    explanation = explain(job)
    if explanation is not None:
        Job.objects.filter(pk=job.pk).update(explanation_key=explanation.key)
        job.explanation_key = explanation.key


def jobs_requeue_stale() -> int:
    """Re-send jobs whose submit task was lost (broker restart, worker crash)."""
    cutoff = timezone.now() - timedelta(seconds=settings.LABQUEUE_RESUBMIT_AFTER_SECONDS)
    stuck = Job.objects.filter(status=Status.SUBMITTING, updated_at__lt=cutoff)
    for job in stuck:
        job_transition(job=job, to=Status.QUEUED, cause="The submission was interrupted; checking again.")
    stale = list(Job.objects.filter(status=Status.QUEUED, updated_at__lt=cutoff).values_list("pk", flat=True))
    from jobs.tasks import submit_job

    for pk in stale:
        Job.objects.filter(pk=pk).update(updated_at=timezone.now())
        submit_job.delay(pk)
    return len(stale)
