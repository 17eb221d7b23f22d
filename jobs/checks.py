"""Checks: an assignment's automatic feedback on a completed job (both sides; README, "Checks").

An assignment version may hold a check script. When one of its jobs completes (jobs.lifecycle.job_transition
calls check_enqueue_on_commit), a CheckRun row is made and the `check_submit` task enqueued once that change
commits. The worker (jobs.tasks.check_submit -> check_submit) chooses a random token, has the job-directory
helper write `check-<token>.sh` into the job's directory as the student and submit it with sbatch
(`--dependency=afterok:<job>`, the job's account, partition and QOS, 1 CPU, no GPU, a few minutes), through
the run-as path of every job. The job-status sync (jobs.dispatch.jobs_sync) follows check jobs in the same
squeue and sacct calls it makes for jobs (checks_in_slurm, checks_follow_queue, checks_finish), and reads the
check's output, `check-<token>.out`, with the job files' safe reading (jobs.files): only that file counts, so
nothing the student's job printed, nor any file it left (it ended before the token was chosen), can pass for
the check's lines. The output format is parsed by check_output_parse (pure):

    CHECK pass <name>: <message>
    CHECK fail <name>: <message>
    SCORE <points>/<max>

Any other line is ignored. A check's status changes only by compare-and-set along CHECK_TRANSITIONS, so a
duplicated task or sync is harmless.
"""

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError

import slurm
from courses.clusters import slurm_cluster
from courses.scripting import Resources, render_script
from jobs import files
from jobs.models import CHECK_ACTIVE_IN_SLURM, CHECK_TRANSITIONS, CheckRun, CheckStatus, Job, Status
from jobs.signals import check_finished
from jobs.workdir import WorkdirError, WorkdirUnavailable, workdir_submit
from portal.celery import app
from portal.identity import netid_refusal
from slurm import states

log = logging.getLogger(__name__)

#: What every check job gets: enough to read and compare files, never a GPU.
CHECK_RESOURCES = Resources(gpus=0, cpus=1, mem_mb=500, minutes=5)
#: The check's output read for its results; the rest is ignored.
OUTPUT_LIMIT = 64 * 1024
#: Check lines kept per job, and the longest name and message kept of each.
MAX_CHECKS = 50
MAX_NAME = 100
MAX_MESSAGE = 500

_CHECK_LINE = re.compile(r"CHECK (pass|fail) ([^:]+):(.*)")
_SCORE_LINE = re.compile(r"SCORE (\d{1,6}(?:\.\d{1,2})?)/(\d{1,6}(?:\.\d{1,2})?)")


# ---- The output format (pure) ----


@dataclass(frozen=True)
class CheckLine:
    passed: bool
    name: str
    message: str


@dataclass(frozen=True)
class CheckOutput:
    checks: tuple[CheckLine, ...]
    score: Decimal | None = None
    max_score: Decimal | None = None


def check_output_parse(text: str) -> CheckOutput:
    """The check lines and the score in a check's output. Lines that do not follow the format, hold control
    characters or repeat a check's name are ignored; a score is taken only when 0 <= points <= max and max > 0
    (the last such SCORE line counts); at most MAX_CHECKS checks are kept."""
    checks: list[CheckLine] = []
    names: set[str] = set()
    score = max_score = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in line.replace("\t", " ")):
            continue
        if found := _SCORE_LINE.fullmatch(line):
            points, most = _decimal(found[1]), _decimal(found[2])
            if points is not None and most is not None and 0 < most and points <= most:
                score, max_score = points, most
            continue
        found = _CHECK_LINE.fullmatch(line)
        if not found or len(checks) >= MAX_CHECKS:
            continue
        name = found[2].strip()
        if not name or len(name) > MAX_NAME or name in names:
            continue
        names.add(name)
        checks.append(CheckLine(passed=found[1] == "pass", name=name, message=found[3].strip()[:MAX_MESSAGE]))
    return CheckOutput(checks=tuple(checks), score=score, max_score=max_score)


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


# ---- Starting a check (both sides: called when a job's completion commits) ----


def check_enqueue_on_commit(*, job: Job, to: str) -> None:
    """Called with every job status change: a job that completed gets its check once the change commits.
    Costs no query."""
    if to == Status.COMPLETED:
        transaction.on_commit(lambda: check_start(job_id=job.pk))


def check_start(*, job_id: int) -> CheckRun | None:
    """Make the job's CheckRun and enqueue its `check_submit` task, when the job's assignment version has a
    check; once per job (a second call finds the row)."""
    job = Job.objects.select_related("assignment_version").get(pk=job_id)
    if job.status != Status.COMPLETED or job.assignment_version is None:
        return None
    if not job.assignment_version.check_script.strip():
        return None
    run, created = CheckRun.objects.get_or_create(job=job)
    if created:
        check_submit_enqueue(run.pk)
    return run


def check_submit_enqueue(check_id: int) -> None:
    """Ask the worker to send the check (the `check_submit` task), by name: jobs.tasks imports this module. A
    task the broker does not take marks the check (`enqueue_failed`) for checks_requeue_stale."""
    try:
        app.tasks["jobs.tasks.check_submit"].delay(check_id)
    except OperationalError as error:  # kombu's wrapper for "the broker did not answer"
        log.error("Could not send the check_submit task for check %s (sent again later): %s", check_id, error)
        CheckRun.objects.filter(pk=check_id).update(enqueue_failed=True)


def _move(run: CheckRun, to: str, **fields) -> bool:
    """Compare-and-set: move the check to `to` if it is still in the status read and the move is allowed."""
    if to not in CHECK_TRANSITIONS[run.status]:
        return False
    now = timezone.now()
    if not CheckRun.objects.filter(pk=run.pk, status=run.status).update(status=to, updated_at=now, **fields):
        return False
    run.status = to
    for name, value in fields.items():
        setattr(run, name, value)
    return True


# ---- Sending a check (worker side) ----


def check_submit(*, check_id: int) -> None:
    """Send a queued check to Slurm as the student. Raises slurm.SlurmUnavailable or WorkdirUnavailable to be
    retried (the check goes back to the queue first)."""
    run = CheckRun.objects.select_related("job__assignment_version").get(pk=check_id)
    if run.status != CheckStatus.QUEUED:
        return
    job = run.job
    refusal = _refusal(job)
    if refusal:
        _move(run, CheckStatus.REFUSED, message=refusal, ended_at=timezone.now())
        return
    # The token is chosen now, after the student's job ended: that job cannot have left a file of this name.
    if not _move(run, CheckStatus.SUBMITTING, token=secrets.token_hex(16), enqueue_failed=False):
        return
    script = render_script(
        body=job.assignment_version.check_script,
        values=job.parameters,
        resources=CHECK_RESOURCES,
        label=f"Check of {job.assignment.title}, attempt {job.attempt}",
    )
    try:
        slurm_id = workdir_submit(check_spec(run), script=script, files=[], script_name=run.script_name)
    except (slurm.SlurmUnavailable, WorkdirUnavailable):
        _move(run, CheckStatus.QUEUED)
        raise
    except (slurm.SlurmRejected, WorkdirError) as error:
        log.info("Check of job %s not sent: %s", job.pk, error)
        _move(run, CheckStatus.REFUSED, message=f"The check could not be sent to the cluster: {error}")
        return
    _move(run, CheckStatus.PENDING, slurm_job_id=slurm_id, slurm_state=states.PENDING)


def check_spec(run: CheckRun) -> slurm.JobSpec:
    """The check's sbatch: in the job's directory, on its account, partition and QOS, after it completed."""
    job, workdir = run.job, Path(run.job.workdir)
    return slurm.JobSpec(
        script_path=str(workdir / run.script_name),
        run_as=job.run_as,
        account=job.account,
        partition=job.partition,
        qos=job.qos,
        job_name=_check_name(job),
        workdir=job.workdir,
        stdout=str(workdir / run.output_name),
        stderr=str(workdir / run.output_name),
        dependency=f"afterok:{job.slurm_job_id}",
        cluster=slurm_cluster(job.cluster),  # a federated job's check is federated too
    )


def _check_name(job: Job) -> str:
    return f"lq-check-{job.uuid}"


def _refusal(job: Job) -> str:
    """Why the check must not run: an account the portal never becomes, or the job's files are gone."""
    if refusal := netid_refusal(job.run_as):
        return refusal
    if job.files_purged_at is not None:
        return "The job's files were removed under the retention policy before the check could run."
    return ""


# ---- Following checks (worker side: the job-status sync) ----


def checks_in_slurm() -> list[CheckRun]:
    """The checks Slurm has, for the sync to ask about in the squeue and sacct calls it makes for jobs."""
    active = CheckRun.objects.filter(status__in=CHECK_ACTIVE_IN_SLURM).exclude(slurm_job_id="")
    return list(active.select_related("job"))


def checks_follow_queue(runs: list[CheckRun], live: dict[str, slurm.LiveJob]) -> list[CheckRun]:
    """Update the checks still in squeue's answer; return those that left the queue (sacct tells how)."""
    left = []
    for run in runs:
        entry = live.get(run.slurm_job_id)
        if entry is None or not states.is_live(entry.state):
            left.append(run)
            continue
        target = CheckStatus.RUNNING if states.is_running(entry.state) else CheckStatus.PENDING
        if target != run.status:
            _move(run, target, slurm_state=entry.state)
    return left


def checks_finish(runs: list[CheckRun], records: dict[str, slurm.AcctRecord]) -> None:
    """Finish the checks whose final state sacct gave: read the output of a completed one, say why another
    did not finish."""
    for run in runs:
        record = records.get(run.slurm_job_id)
        outcome = states.final_outcome(record.state) if record else None
        if outcome is None:
            continue
        fields = {"slurm_state": record.state, "ended_at": record.end or timezone.now()}
        if outcome == states.OUTCOME_COMPLETED:
            if _move(run, CheckStatus.DONE, **fields, **_results(run)):
                check_finished.send_robust(sender=CheckRun, check_run=run)  # a listener never stops the sync
        else:
            _move(run, CheckStatus.FAILED, **fields, message=_why_not_finished(record))


def _results(run: CheckRun) -> dict:
    """The parsed output of a completed check, read with the job files' safe reading (no symlink followed,
    only a regular file of the student's with one link)."""
    try:
        data, _size = files.read_head(run.job.workdir, run.output_name, OUTPUT_LIMIT)
    except (files.UnsafePath, OSError):
        return {"message": "The check finished but its output could not be read, so it gives no results."}
    output = check_output_parse(data.decode("utf-8", errors="replace"))
    return {
        "results": [{"passed": line.passed, "name": line.name, "message": line.message} for line in output.checks],
        "score": output.score,
        "max_score": output.max_score,
        "message": "" if output.checks or output.score is not None else "The check printed no results.",
    }


def _why_not_finished(record: slurm.AcctRecord) -> str:
    if record.state == "TIMEOUT":
        return "The check ran out of time (it has a few minutes), so it gives no results. Tell your instructor."
    if states.final_outcome(record.state) == states.OUTCOME_CANCELLED:
        return "The check was cancelled before it finished, so it gives no results."
    return (
        f"The check itself failed (Slurm state {record.state}, exit code {record.exit_code}), so it gives no "
        "results. This is not a verdict on your job; tell your instructor."
    )


def checks_requeue_stale() -> None:
    """Send again the checks whose task the broker did not take, or that have waited to be sent for longer
    than LABQUEUE_RESUBMIT_AFTER_SECONDS (a lost task). A check left being sent that long (its worker died)
    is looked up by name in Slurm: adopted if sbatch took it, else sent again."""
    cutoff = timezone.now() - timedelta(seconds=settings.LABQUEUE_RESUBMIT_AFTER_SECONDS)
    # The helper and sbatch of a sender that died may live on: wait until they have surely given up.
    grace = min(cutoff, timezone.now() - timedelta(seconds=settings.LABQUEUE_JOBDIR_TIMEOUT))
    stuck = CheckRun.objects.filter(status=CheckStatus.SUBMITTING, updated_at__lt=grace).select_related("job")
    for run in list(stuck):
        try:
            found = slurm.find_by_name(_check_name(run.job), cluster=slurm_cluster(run.job.cluster))
        except slurm.SlurmUnavailable as error:
            log.warning("Checks left being sent not looked up, Slurm did not answer: %s", error)
            break
        if found:
            _move(run, CheckStatus.PENDING, slurm_job_id=found, slurm_state=states.PENDING)
        else:
            _move(run, CheckStatus.QUEUED, enqueue_failed=True)
    stale = CheckRun.objects.filter(Q(enqueue_failed=True) | Q(updated_at__lt=cutoff), status=CheckStatus.QUEUED)
    for pk in list(stale.values_list("pk", flat=True)):
        CheckRun.objects.filter(pk=pk).update(enqueue_failed=False, updated_at=timezone.now())
        check_submit_enqueue(pk)
