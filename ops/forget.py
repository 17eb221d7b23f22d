"""Forgetting a person who left (`manage.py forget_person`; docs/records.md, "Deleting or anonymising a person").

What stays is what the course and the cluster's accounting need, under a pseudonym (reports.pseudonyms):
- their usage records, with the cluster username replaced by the pseudonym, so course totals, the per-student
  report (one row for the pseudonym) and the reconciliation with Slurm's accounting add up as before;
- their job records (assignment, resources, status, times, exit code, the explanation's key), so failure counts,
  attempts and the reconciliation still match, with what the person wrote or said removed: parameters, the
  batch script built from them, staff notes on their jobs; their netid in messages and history replaced by
  the pseudonym;
- the user row itself (the jobs and usage point at it), renamed to the pseudonym, without name or e-mail,
  unable to sign in.

What goes: their jobs' files (job directories, removed as the person through the job-directory helper, and
staged uploads), their sessions (signed out everywhere) and the uploads those sessions kept, their campus
sign-in links (social accounts) and e-mail addresses, their API tokens, their enrollments (they left every
course; their usage then shows as "not a student of this course"), their group memberships and permissions.

Slurm is not changed: the association of their netid on each course account is then an association the portal
does not know, listed as "left alone" on the association drift page for the operators to remove (sacctmgr), and
slurmdbd keeps its own job records under the real netid for as long as the site's slurmdbd.conf purges say.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from django.utils import timezone

from api.models import PersonalToken
from clusterpolicy.models import AssociationRun
from courses.models import Enrollment
from jobs.models import TERMINAL, Job, JobEvent, JobNote
from jobs.retention import FilesRemoval, job_files_remove
from jobs.uploads import SESSION_KEY, uploads_discard
from reports.course_report import course_reports_forget
from reports.models import UsageRecord
from reports.pseudonyms import PREFIX, pseudonym

FILES_CAUSE = (
    "The job's files (its output, logs and uploads) were removed: the person who ran it left and their personal "
    "data was removed (manage.py forget_person). The job's record and its usage stay under a pseudonym."
)


class ForgetRefused(Exception):
    """The person cannot be forgotten now; the message says why and what to do."""


@dataclass
class ForgetReport:
    """What was (or, in a dry run, would be) removed or changed."""

    netid: str
    pseudonym: str
    files: list[FilesRemoval] = field(default_factory=list)
    jobs: int = 0
    notes: int = 0
    usage_records: int = 0
    enrollments: list[str] = field(default_factory=list)
    sessions: int = 0
    social_accounts: int = 0
    email_addresses: int = 0
    api_tokens: int = 0

    @property
    def failed(self) -> list[FilesRemoval]:
        return [removal for removal in self.files if removal.error]


def person_forget(*, netid: str, dry_run: bool = False) -> ForgetReport:
    """Remove a person's files and personal data, keeping their jobs and usage under a pseudonym.

    `netid` is their cluster username (for someone who never had one: their portal username). Raises
    ForgetRefused for an unknown or already forgotten netid, or someone with jobs not finished. When
    some job's files cannot be removed, nothing else is changed (the report lists them): run it again once
    they are fixed, since a second run removes only what is left."""
    people = get_user_model().objects
    user = people.filter(netid=netid).first() or people.filter(username=netid, netid__isnull=True).first()
    if user is None:
        if netid.startswith(PREFIX):
            raise ForgetRefused(f"{netid} is already a pseudonym: that person was forgotten before.")
        raise ForgetRefused(f"No person in the portal has the cluster username '{netid}'. Check the spelling.")
    _refuse_with_live_jobs(user, netid)
    report = _counted(user, netid)
    for job in Job.objects.filter(user=user, files_purged_at__isnull=True).select_related("assignment__course"):
        report.files.append(job_files_remove(job=job, cause=FILES_CAUSE, dry_run=dry_run))
    if dry_run or report.failed:
        return report
    _anonymise(user, netid, report.pseudonym)
    course_reports_forget()  # a kept course report may list them by name
    return report


def _refuse_with_live_jobs(user, netid: str) -> None:
    live = list(Job.objects.filter(user=user).exclude(status__in=TERMINAL).order_by("created_at"))
    if live:
        listed = ", ".join(f"{job.uuid} ({job.get_status_display().lower()})" for job in live)
        raise ForgetRefused(
            f"{netid} has {len(live)} job(s) that have not finished: {listed}. Their files are still in use and "
            "Slurm has not reported their usage yet. Cancel them first (on each job's page, or `scancel` as an "
            "operator), wait until the portal shows them as cancelled, then run this again."
        )


def _counted(user, netid: str) -> ForgetReport:
    return ForgetReport(
        netid=netid,
        pseudonym=pseudonym(netid),
        jobs=Job.objects.filter(user=user).count(),
        notes=JobNote.objects.filter(job__user=user).count(),
        usage_records=UsageRecord.objects.filter(user=user.netid).count() if user.netid else 0,
        enrollments=[str(e.course) for e in Enrollment.objects.filter(user=user).select_related("course")],
        sessions=len(_sessions_of(user)),
        social_accounts=SocialAccount.objects.filter(user=user).count(),
        email_addresses=EmailAddress.objects.filter(user=user).count(),
        api_tokens=PersonalToken.objects.filter(owner=user).count(),
    )


@transaction.atomic
def _anonymise(user, netid: str, name: str) -> None:
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    _refuse_with_live_jobs(user, netid)  # again: they may have submitted one while their files were removed
    words = _words(user, netid)

    def scrub(text: str) -> str:
        return words.sub(name, text) if text else text

    for job in Job.objects.filter(user=user).select_for_update():
        job.run_as = name
        workdir = Path(job.workdir)  # <job root>/<netid>/<job uuid>
        if workdir.parent.name == netid:
            job.workdir = str(workdir.parent.parent / name / workdir.name)
        job.parameters, job.script, job.submission_key = {}, "", ""
        job.message, job.reason = scrub(job.message), scrub(job.reason)
        job.cancelled_by = name if job.cancelled_by == netid else scrub(job.cancelled_by)
        job.accounting = json.loads(scrub(json.dumps(job.accounting))) if job.accounting else job.accounting
        job.save(update_fields=FORGOTTEN_JOB_FIELDS)
    JobNote.objects.filter(job__user=user).delete()
    for event in JobEvent.objects.filter(job__user=user):
        if (cause := scrub(event.cause)) != event.cause:
            JobEvent.objects.filter(pk=event.pk).update(cause=cause)
    if user.netid:  # someone without a cluster username has no usage (and another's records may carry that name)
        UsageRecord.objects.filter(user=netid).update(user=name)
        _scrub_association_runs(scrub, netid)
    Enrollment.objects.filter(user=user).delete()
    for session in _sessions_of(user):
        for token in session.get_decoded().get(SESSION_KEY, []):
            uploads_discard(token=token)
        session.delete()
    SocialAccount.objects.filter(user=user).delete()
    EmailAddress.objects.filter(user=user).delete()
    PersonalToken.objects.filter(owner=user).delete()  # a script holding one is refused from now on
    LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(user), object_id=str(user.pk)).update(
        object_repr=name
    )
    user.username = user.netid = name
    user.first_name = user.last_name = user.email = ""
    user.is_active = user.is_staff = user.is_superuser = False
    user.last_login = None
    user.set_unusable_password()
    user.save()
    user.groups.clear()
    user.user_permissions.clear()


#: What forgetting changes on a job row.
FORGOTTEN_JOB_FIELDS = [
    "run_as",
    "workdir",
    "parameters",
    "script",
    "submission_key",
    "message",
    "reason",
    "cancelled_by",
    "accounting",
]


def _words(user, netid: str) -> re.Pattern:
    """The person's netid, username, e-mail and full name as whole words (so "ed" leaves "Accepted" alone)."""
    names = {user.username, user.email, user.get_full_name()}
    names = sorted({netid, *(name for name in names if len(name) > 1)}, key=len, reverse=True)
    return re.compile("|".join(rf"(?<![\w.-]){re.escape(name)}(?![\w-])" for name in names))


def _scrub_association_runs(scrub, netid: str) -> None:
    """The association runs list sacctmgr commands naming the netid: the pseudonym instead."""
    text = Cast("changes", TextField())
    runs = AssociationRun.objects.annotate(changes_text=text, unmanaged_text=Cast("unmanaged", TextField()))
    for run in runs.filter(changes_text__contains=netid) | runs.filter(unmanaged_text__contains=netid):
        run.changes = json.loads(scrub(json.dumps(run.changes)))
        run.unmanaged = json.loads(scrub(json.dumps(run.unmanaged)))
        run.errors = json.loads(scrub(json.dumps(run.errors)))
        run.save(update_fields=["changes", "unmanaged", "errors"])


def _sessions_of(user) -> list[Session]:
    """The person's signed-in sessions (the session store is the database)."""
    sessions = Session.objects.filter(expire_date__gt=timezone.now())
    return [session for session in sessions if session.get_decoded().get("_auth_user_id") == str(user.pk)]
