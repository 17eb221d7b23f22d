"""E-mail about jobs: a mail to the student when a job finishes, fails or is refused (as each person chose on
the notifications page), and TAs' and instructors' daily digest of their courses' new failures.

A job that reaches one of those ends enqueues `job_notify` after its status change commits
(jobs.lifecycle.job_transition); the worker's task (jobs.tasks.job_notify) renders and sends the mail. Each
mail is recorded by a (job, event) row inserted in the same transaction as the sending: a replayed task, or
two workers at once, find the row (the second waits on the first's insert) and send nothing, and a mail the
server did not accept leaves no row, so the task's retry sends it. Digests are recorded the same way, one per
person and day.

Where the campus sign-in sends no e-mail address, the notifications page (web side) lets the person give
one: notification_address_send mails it a signed, time-limited link, and notification_address_verify makes it
the account's address only when the link comes back to the same signed-in person. Until then nothing is
mailed to it.
"""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core import signing
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from kombu.exceptions import OperationalError

from courses.models import STAFF_ROLES, Course, Enrollment
from jobs.explanations import explain, explanation_label, status_text
from jobs.models import FailureDigest, Job, JobEvent, JobNotification, NotificationPreference, Status
from portal.celery import app

log = logging.getLogger(__name__)

#: The job ends a student can be mailed about, by the name of the preference that asks for each.
EVENTS: dict[str, str] = {
    Status.COMPLETED: "finished",
    Status.FAILED: "failed",
    Status.REJECTED: "refused",
}
#: What each event says in a subject line: "Your job failed: ...".
VERBS = {"finished": "finished", "failed": "failed", "refused": "was refused"}
#: The ends a TA's digest lists (the course's failures page shows the same).
FAILURES = (Status.FAILED, Status.REJECTED)
#: At most this many failures are listed per digest; the rest are counted and the failures page has them all.
DIGEST_LIMIT = 50
#: How long a link that verifies a person's own address works.
ADDRESS_LINK_SECONDS = 24 * 3600
#: At most one address-verification mail a person a minute
ADDRESS_MAIL_SECONDS = 60
#: Keeps these links apart from anything else the site signs with its secret key.
ADDRESS_SALT = "jobs.notifications.address"


class AddressLinkRefused(Exception):
    """A verification link that sets no address; its message says why and what to do next."""


def job_notify_on_commit(*, job: Job, to: str) -> None:
    """Called with every status change: when it ends the job in a way a student can be mailed about, enqueue
    the mail once the change commits (a rolled-back change mails nothing). Costs no query."""
    if to in EVENTS:
        transaction.on_commit(lambda: job_notify_enqueue(job.pk))


def job_notify_enqueue(job_id: int) -> None:
    """Ask the worker to mail the job's owner (the `job_notify` task), by name: jobs.tasks imports this module.
    A task the broker does not take marks the job (`enqueue_failed`) for `job_notify_resend`."""
    try:
        app.tasks["jobs.tasks.job_notify"].delay(job_id)
    except OperationalError as error:  # kombu's wrapper for "the broker did not answer"
        log.error("Could not send the job_notify task for job %s (sent again later): %s", job_id, error)
        Job.objects.filter(pk=job_id).update(enqueue_failed=True)


def job_notify_resend() -> int:
    """Send again the `job_notify` tasks the broker did not take (the job-notify-resend beat entry). A job
    that ended may also carry the mark from a cancel that could not be sent: its task finds nothing to do
    or mails once, as any."""
    missed = list(Job.objects.filter(enqueue_failed=True, status__in=list(EVENTS)).values_list("pk", flat=True))
    for pk in missed:
        Job.objects.filter(pk=pk).update(enqueue_failed=False)
        job_notify_enqueue(pk)
    return len(missed)


def notification_preference_get(*, user) -> NotificationPreference:
    """The person's choices; the defaults (mail on failure and refusal) when they never changed them."""
    return NotificationPreference.objects.filter(user=user).first() or NotificationPreference(user=user)


def user_is_course_staff(*, user) -> bool:
    """TA or instructor in at least one course: may ask for the failure digest."""
    return Enrollment.objects.filter(user=user, role__in=STAFF_ROLES).exists()


def address_link_claim(*, user) -> int | None:
    """Claim the person's one address-verification mail a minute (whatever the sessions, browsers and web
    processes it is asked from): None when claimed, else how many seconds ago the last one was sent."""
    now = timezone.now()
    NotificationPreference.objects.get_or_create(user=user)
    mine = NotificationPreference.objects.filter(user=user)
    due = Q(address_link_sent_at=None) | Q(address_link_sent_at__lte=now - timedelta(seconds=ADDRESS_MAIL_SECONDS))
    if mine.filter(due).update(address_link_sent_at=now):
        return None
    return int((now - mine.values_list("address_link_sent_at", flat=True).get()).total_seconds())


def address_link_unclaim(*, user) -> None:
    """The claimed mail could not be sent: the person may ask again at once."""
    NotificationPreference.objects.filter(user=user).update(address_link_sent_at=None)


def notification_address_send(*, user, address: str) -> None:
    """Mail `address` a link that makes it the person's address once they open it, signed in, within
    ADDRESS_LINK_SECONDS. Records nothing. Raises what the mail server raises (smtplib.SMTPException, OSError)."""
    token = signing.dumps({"user": user.pk, "email": address}, salt=ADDRESS_SALT)
    context = {
        "user": user,
        "address": address,
        "link": site_link(reverse("jobs:notification-address-confirm", args=[token])),
        "hours": ADDRESS_LINK_SECONDS // 3600,
    }
    subject = render_to_string("jobs/email/address_verify_subject.txt", context)
    body = render_to_string("jobs/email/address_verify.txt", context)
    EmailMessage(" ".join(subject.split()), body, to=[address]).send()


def notification_address_verify(*, user, token: str) -> str:
    """The address a link from notification_address_send carries, now the account's own (job mail goes there).
    Raises AddressLinkRefused for a link that is changed, forged, expired, another account's, or one for an
    account that has an address already."""
    hours = ADDRESS_LINK_SECONDS // 3600
    try:
        signed = signing.loads(token, salt=ADDRESS_SALT, max_age=ADDRESS_LINK_SECONDS)
    except signing.SignatureExpired:
        raise AddressLinkRefused(f"This link has expired: links work for {hours} hours. Ask for a new one below.")
    except signing.BadSignature:
        raise AddressLinkRefused(
            "This link is not one LabQueue sent, or part of it was lost in copying. Open it from the mail again, "
            "or ask for a new one below."
        )
    if signed.get("user") != user.pk:
        raise AddressLinkRefused(
            "This link was sent for another account. Sign in as the person who asked for it, or ask for a new "
            "one below."
        )
    if user.email and user.email != signed["email"]:
        raise AddressLinkRefused(f"Your account already has an address ({user.email}), so this link changes nothing.")
    user.email = signed["email"]
    user.save(update_fields=["email"])
    log.info("Verified the notification address of user %s", user.pk)
    return user.email


def site_link(path: str) -> str:
    """An absolute link for mail (LABQUEUE_SITE_URL)."""
    return settings.LABQUEUE_SITE_URL.rstrip("/") + path


def job_notify(*, job_id: int) -> bool:
    """Mail the job's owner about how it ended, if they want it and were not mailed about it already.
    True when a mail was sent. Raises what the mail server raises (smtplib.SMTPException, OSError) to be
    retried: nothing is recorded then."""
    job = Job.objects.select_related("assignment__course", "user").filter(pk=job_id).first()
    event = EVENTS.get(job.status) if job is not None else None
    if event is None:
        return False
    preference = notification_preference_get(user=job.user)
    if not getattr(preference, f"notify_{event}") or not job.user.email:
        return False
    mail = _job_mail(job, event)
    with transaction.atomic():
        _, created = JobNotification.objects.get_or_create(job=job, event=event)
        if not created:
            return False
        mail.send()
    log.info("Mailed %s about job %s (%s)", job.user.email, job.uuid, event)
    return True


def _job_mail(job: Job, event: str) -> EmailMessage:
    explanation = explain(job)
    context = {
        "job": job,
        "event": event,
        "verb": VERBS[event],
        "status_text": status_text(job),
        "explanation": explanation,
        "job_link": site_link(reverse("jobs:job-detail", args=[job.uuid])),
        "settings_link": site_link(reverse("jobs:notification-settings")),
        "support_contact": settings.LABQUEUE_SUPPORT_CONTACT,
    }
    subject = render_to_string("jobs/email/job_ended_subject.txt", context)
    body = render_to_string("jobs/email/job_ended.txt", context)
    return EmailMessage(" ".join(subject.split()), body, to=[job.user.email])


@dataclass(frozen=True)
class CourseFailures:
    course: Course
    jobs: list[Job]
    more: int
    link: str


def failure_digests_send(*, now=None) -> int:
    """Mail each TA or instructor who asked for it the failures recorded in their courses since their last
    digest (or the last day, for the first one). One digest a person a day, however often this runs; nobody
    is mailed about a day without failures. Returns how many digests were sent."""
    now = now or timezone.now()
    day = timezone.localdate(now)
    sent = 0
    for preference in NotificationPreference.objects.filter(daily_digest=True).select_related("user"):
        user = preference.user
        if not user.email or FailureDigest.objects.filter(user=user, day=day).exists():
            continue
        last = FailureDigest.objects.filter(user=user).order_by("-until").values_list("until", flat=True).first()
        since = last or now - timedelta(days=1)
        listed = _failures_since(user=user, since=since, now=now)
        total = sum(len(course.jobs) + course.more for course in listed)
        if not total:
            continue
        mail = _digest_mail(user=user, listed=listed, total=total, since=since)
        try:
            with transaction.atomic():
                _, created = FailureDigest.objects.get_or_create(
                    user=user, day=day, defaults={"until": now, "failures": total}
                )
                if not created:
                    continue
                mail.send()
        except OSError as error:  # this person's only: the next digest lists these failures too
            log.error("Could not mail the failure digest to %s: %s", user.email, error)
            continue
        sent += 1
        log.info("Mailed the failure digest to %s: %d failure(s)", user.email, total)
    return sent


def _failures_since(*, user, since, now) -> list[CourseFailures]:
    """Per course the person is TA or instructor of: the jobs the portal recorded as failed or refused in
    (since, now], oldest first."""
    courses = Course.objects.filter(enrollments__user=user, enrollments__role__in=STAFF_ROLES).order_by("code")
    listed = []
    for course in courses:
        ended = JobEvent.objects.filter(
            job__assignment__course=course, to_status__in=FAILURES, at__gt=since, at__lte=now
        ).values("job_id")
        jobs = Job.objects.filter(pk__in=ended).select_related("assignment__course", "user").order_by("ended_at")
        count = jobs.count()
        if count:
            link = site_link(reverse("jobs:course-failures", args=[course.slug]))
            listed.append(CourseFailures(course, list(jobs[:DIGEST_LIMIT]), count - min(count, DIGEST_LIMIT), link))
    return listed


def _digest_mail(*, user, listed: list[CourseFailures], total: int, since) -> EmailMessage:
    rows = {
        course.course.pk: [
            {
                "job": job,
                "explanation": explanation_label(job.explanation_key),
                "link": site_link(reverse("jobs:job-detail", args=[job.uuid])),
            }
            for job in course.jobs
        ]
        for course in listed
    }
    context = {
        "user": user,
        "courses": [{"failures": course, "rows": rows[course.course.pk]} for course in listed],
        "total": total,
        "since": since,
        "settings_link": site_link(reverse("jobs:notification-settings")),
    }
    subject = render_to_string("jobs/email/failure_digest_subject.txt", context)
    body = render_to_string("jobs/email/failure_digest.txt", context)
    return EmailMessage(" ".join(subject.split()), body, to=[user.email])
