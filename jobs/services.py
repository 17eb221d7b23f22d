"""Request side of the job lifecycle: what a web request (or a TA acting for a student) writes.

No Slurm command runs here: work for the cluster is enqueued after the transaction commits and
done by jobs.dispatch in the worker. Status changes go through jobs.lifecycle.job_transition only.
"""

import shutil
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from clusterpolicy.selectors import course_qos
from courses.deadlines import is_late, submission_date_problem
from courses.models import Assignment, AssignmentVersion, Course, Dataset
from courses.policy import budget_applies, resource_problems, running_notice, submission_problems
from courses.scripting import Resources, render_script, script_body
from courses.selectors import course_role, course_within_ceilings, lab_in_progress
from courses.services import assignment_version_current
from jobs.enqueue import job_dispatch_enqueue, job_scancel_enqueue
from jobs.lifecycle import job_transition
from jobs.models import ACTIVE_IN_SLURM, TERMINAL, InteractiveSession, Job, JobEvent, JobNote, Status
from jobs.selectors import student_gpu_hours, student_standing
from jobs.sessions import session_launcher
from jobs.staging import staging_clear, staging_dir
from jobs.workdir import job_workdir


class NotEnrolled(PermissionDenied):
    """No new job runs as someone who is not (or no longer) enrolled in the course: views answer 403."""


def job_enrollment_check(*, user, course: Course, actor=None) -> None:
    """Raise NotEnrolled unless `user` is in the course (dropped from the roster: no new job, no retry)."""
    if course_role(user=user, course=course) is not None:
        return
    if actor is None or actor.pk == user.pk:
        who, whom = "You are", "you"
    else:
        who, whom = f"{user} is", "them"
    raise NotEnrolled(
        f"{who} no longer enrolled in {course}, so no new job can run for {whom} in it. Earlier jobs and their "
        f"files stay readable. If this is a mistake, ask the course's instructor to add {whom} to the roster again."
    )


def _retried_script(job: Job) -> tuple[AssignmentVersion | None, str]:
    """The version and template body the attempt being retried ran: a retry runs that again, with that
    version's starter files and data sets, never a template or file edited since (which would run new code
    as the student at a time someone else chose)."""
    if job.assignment_version_id is not None:
        return job.assignment_version, job.assignment_version.script_template
    body = script_body(job.script)
    if body is None:
        raise ValidationError(
            "This attempt's script is not on record, so it cannot be run again as it was. "
            "Submit the assignment again instead (it runs the current script)."
        )
    return None, body


def job_submit(*, user, submission_key: str = "", **request) -> Job:
    """Record a job request and send it to the cluster once the transaction commits (`_job_create`).

    `submission_key` is the one-time key of the form the request came from: the same form sent twice
    (a double click, a reload, two requests at once) gives the one job both times.
    """
    if submission_key:
        earlier = Job.objects.filter(user=user, submission_key=submission_key).first()
        if earlier is not None:
            return earlier
    try:
        return _job_create(user=user, submission_key=submission_key, **request)
    except IntegrityError:  # the same form's other request committed first
        earlier = Job.objects.filter(user=user, submission_key=submission_key).first() if submission_key else None
        if earlier is None:
            raise
        return earlier


@transaction.atomic
def _job_create(
    *,
    user,
    submission_key: str,
    assignment: Assignment,
    values: dict,
    resources: Resources,
    dataset: Dataset | None = None,
    uploads: list[UploadedFile] = (),
    retry_of: Job | None = None,
    resubmit_of: Job | None = None,
    actor=None,
) -> Job:
    """`actor` is who pressed the button when it is not the student (a TA retrying for them).
    `resubmit_of` is the attempt an edited resubmission came from (it runs the current script)."""
    actor = actor or user
    course = assignment.course
    limits, live, used = _request_allowed(
        user=user, assignment=assignment, resources=resources, actor=actor, retry_of=retry_of
    )
    job = Job(user=user, assignment=assignment, run_as=user.netid, parameters=values, dataset=dataset)
    version, script = _job_script(
        assignment=assignment,
        values=values,
        resources=resources,
        dataset=dataset,
        retry_of=retry_of,
        session_of=job.uuid if assignment.interactive else None,
    )
    _job_place(job, course=course, resources=resources)
    job.script, job.assignment_version = script, version
    job.created_by = actor if actor.pk != user.pk else None
    job.submission_key = submission_key
    job.late = retry_of.late if retry_of is not None else is_late(assignment=assignment, at=timezone.now())
    if retry_of is not None:
        job.retry_of, job.attempt = retry_of, retry_of.attempt + 1
    elif resubmit_of is not None:
        # The student's how-many-th job of the assignment: the number the attempt cap counts.
        job.resubmit_of, job.attempt = resubmit_of, used + 1
    job.save()
    if assignment.interactive:
        InteractiveSession.objects.create(job=job)
    cause = _submitted_cause(job, actor=actor, notice=running_notice(course=limits, live_jobs=live))
    JobEvent.objects.create(job=job, to_status=Status.QUEUED, cause=cause, actor=actor)
    _stage_uploads(job, uploads)
    if retry_of is not None:
        _copy_staged(source=retry_of, target=job)
    transaction.on_commit(lambda: job_dispatch_enqueue(job.pk))
    return job


def _job_place(job: Job, *, course: Course, resources: Resources) -> None:
    """What the job asks Slurm for and where: its resources, the course's account, partition, QOS and cluster,
    and its folder in the job root."""
    job.gpus, job.cpus, job.mem_mb, job.minutes = resources.gpus, resources.cpus, resources.mem_mb, resources.minutes
    job.account, job.partition, job.qos = course.slurm_account, course.partition, course_qos(course)
    job.cluster = course.cluster
    job.workdir = str(job_workdir(netid=job.run_as, job_uuid=str(job.uuid)))


def _request_allowed(
    *, user, assignment: Assignment, resources: Resources, actor, retry_of: Job | None = None
) -> tuple[Course, int, int]:
    """Refuse (ValidationError, with every reason) a request the student may not make now; else the course's
    limits held to the ceilings, the student's live jobs and their number of jobs of the assignment.
    A retry is not held to the assignment's dates: its first attempt was (courses.deadlines)."""
    course = assignment.course
    job_enrollment_check(user=user, course=course, actor=actor)
    if retry_of is None and (problem := submission_date_problem(assignment=assignment, at=timezone.now())):
        raise ValidationError(problem)
    if assignment.interactive and assignment.interactive_labs_only and not lab_in_progress(course=course):
        raise ValidationError(
            "Notebook sessions for this assignment open only while one of the course's labs is on, and none is "
            "on now. The course page lists the next lab."
        )
    if not user.netid:
        raise ValidationError(
            "Your portal account is not linked to a cluster username yet, so jobs cannot run as you. "
            "Ask the course staff to add your cluster username."
        )
    limits = course_within_ceilings(course=course)
    problems = resource_problems(course=limits, resources=resources)
    if problems:
        raise ValidationError(list(problems.values()))
    # A student's requests one after the other from here to the commit: two at once would both count the jobs
    # before either is saved, and pass the attempt cap, the job cap or the GPU-hour budget together. (FOR NO KEY
    # UPDATE: rows that refer to the student, such as the other request's job, do not wait on it.)
    get_user_model().objects.select_for_update(no_key=True).filter(pk=user.pk).exists()
    standing = student_standing(user=user, course=course, assignment=assignment)
    live, used = standing["live"], standing["attempts"]
    refusals = submission_problems(
        course=limits,
        resources=resources,
        active_jobs=live,
        gpu_hours_used=_gpu_hours_if_counted(user=user, limits=limits, resources=resources, standing=standing),
    )
    if refusals:
        raise ValidationError(refusals)
    if assignment.max_attempts and used >= assignment.max_attempts:
        raise ValidationError(
            f"This assignment allows {assignment.max_attempts} attempts per student and "
            f"{used} have been used. Ask your instructor if you need another."
        )
    return limits, live, used


def _gpu_hours_if_counted(*, user, limits: Course, resources: Resources, standing: dict) -> float:
    """The student's GPU-hours in the course where the budget applies to this request (0 where it does not:
    no budget, or a job without GPUs), so that a request it cannot refuse costs no query for them."""
    if not budget_applies(course=limits, resources=resources):
        return 0.0
    return student_gpu_hours(user=user, course=limits, finished_gpu_seconds=standing["finished_gpu_seconds"])


def _job_script(
    *,
    assignment: Assignment,
    values: dict,
    resources: Resources,
    dataset: Dataset | None,
    retry_of: Job | None,
    session_of=None,
) -> tuple[AssignmentVersion | None, str]:
    """The version the job runs (a retry: its attempt's) and the batch script rendered from it; with
    `session_of` (the new job's uuid) the script ends by starting that job's notebook server (jobs.sessions)."""
    if retry_of is not None:
        version, body = _retried_script(retry_of)
    else:
        version = assignment_version_current(assignment=assignment)
        body = version.script_template
    # A retry keeps its attempt's data set, which that attempt's version offered (a version never changes), so only
    # the assignment is asked: a data set the instructor has withdrawn since refuses a retry as it refuses a new job.
    if dataset is not None and not assignment.datasets.filter(pk=dataset.pk).exists():
        raise ValidationError("That data set is not approved for this assignment.")
    script = render_script(
        body=body,
        values=values,
        resources=resources,
        dataset_path=dataset.path if dataset else "",
        label=f"{assignment.course.code}: {assignment.title}",
        epilogue=session_launcher(job_uuid=session_of) if session_of else "",
    )
    return version, script


def _submitted_cause(job: Job, *, actor, notice: str) -> str:
    """The history line of a new job: where it came from, who asked, and a running-limit notice."""
    if job.retry_of is not None:
        cause = f"Retry of attempt {job.retry_of.attempt}."
    elif job.resubmit_of is not None:
        cause = f"Edited and resubmitted from attempt {job.resubmit_of.attempt}."
    else:
        cause = "Submitted in the portal."
    if actor.pk != job.user_id:
        cause += f" Requested by {actor} on the student's behalf."
    if notice:
        cause += f" {notice}"
    return cause


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
    """A new attempt of a failed, cancelled or refused job: same version (script, starter files), parameters,
    data set and uploaded files; resources as given (still within the course's limits). Each attempt is
    retried at most once, so a double click or a replayed POST returns the same new attempt."""
    existing = Job.objects.filter(retry_of=job).first()
    if existing is not None:
        return existing
    if not job.can_retry:
        raise ValidationError("Only a failed, cancelled or refused job can be retried.")
    try:
        with transaction.atomic():
            return job_submit(
                user=job.user,
                assignment=job.assignment,
                values=job.parameters,
                dataset=job.dataset,
                resources=resources or Resources(**job.resources),
                retry_of=job,
                actor=actor,
            )
    except IntegrityError:
        return Job.objects.get(retry_of=job)


def job_resubmit(
    *,
    job: Job,
    user,
    submission_key: str,
    values: dict,
    resources: Resources,
    dataset: Dataset | None,
    uploads: list,
) -> Job:
    """A new attempt edited from `job` (any status, even one still running: that one keeps running): the
    parameters, data set, resources and files the student sent, checked like any submission (caps, attempt
    cap) and run with the assignment's current version, its script and starter files, which the new job
    records. Only the job's owner resubmits it. The form's one-time `submission_key` makes a double click or
    a replayed POST give the one new job."""
    if job.user_id != user.pk:
        raise PermissionDenied("Only the student who submitted this job can resubmit it.")
    return job_submit(
        user=user,
        submission_key=submission_key,
        assignment=job.assignment,
        values=values,
        resources=resources,
        dataset=dataset,
        uploads=uploads,
        resubmit_of=job,
    )


def retry_suggestion(*, job: Job, suggest: dict[str, int]) -> Resources:
    """Resources for a retry: the explanation's suggested factor, kept within the course's limits."""
    course = job.assignment.course
    caps = {
        "gpus": course.max_gpus_per_job,
        "cpus": course.max_cpus_per_job,
        "mem_mb": course.max_mem_mb_per_job,
        "minutes": course.max_minutes_per_job,
    }
    values = dict(job.resources)
    for name, factor in suggest.items():
        values[name] = min(caps[name], values[name] * factor) if factor else min(caps[name], values[name])
    return Resources(**values)


#: The same note sent again this soon by the same person is the same note (a double click, a reload).
NOTE_REPEAT_SECONDS = 120


@transaction.atomic
def job_note_add(*, job: Job, author, text: str) -> JobNote:
    text = text.strip()
    if not text:
        raise ValidationError("Write something in the note.")
    Job.objects.select_for_update().filter(pk=job.pk).first()  # two requests at once: one after the other
    since = timezone.now() - timedelta(seconds=NOTE_REPEAT_SECONDS)
    repeated = JobNote.objects.filter(job=job, author=author, text=text, created_at__gte=since).first()
    if repeated is not None:
        return repeated
    note = JobNote.objects.create(job=job, author=author, text=text)
    JobEvent.objects.create(job=job, cause="Course staff added a note.", actor=author)
    return note


@transaction.atomic
def job_review(*, job: Job, reviewer) -> None:
    if Job.objects.filter(pk=job.pk, reviewed_at__isnull=True).update(reviewed_at=timezone.now(), reviewed_by=reviewer):
        JobEvent.objects.create(job=job, cause="Marked as reviewed.", actor=reviewer)


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
    # Nothing to ask when the job has moved on to an end meanwhile (another request's cancel got there first).
    not_ended = Job.objects.filter(pk=job.pk, cancel_requested=False).exclude(status__in=TERMINAL)
    if not not_ended.update(cancel_requested=True):
        return
    JobEvent.objects.create(job=job, cause="Cancel requested.", actor=actor)
    if job.status in ACTIVE_IN_SLURM:
        transaction.on_commit(lambda: job_scancel_enqueue(job.pk))
