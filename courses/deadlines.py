"""An assignment's dates: when students may submit, and which submissions are late. Web side (the job request
and the pages that show the dates); no Slurm, no database writes.

A retry is judged by the moment its first attempt was submitted, not by the moment of the retry: a job handed
in on time that failed on the cluster may be run again after the due date and is still on time.
"""

from datetime import datetime

from django.utils import timezone

from courses.models import Assignment, LatePolicy
from portal.templatetags.portal_time import duration_text


def time_left(seconds: float) -> str:
    """A time span as a deadline reads: "2 days 3 h", "3 h 05 min", "12 min 4 s"."""
    days, rest = divmod(int(seconds), 86400)
    if days:
        return f"{days} day{'s' if days != 1 else ''} {rest // 3600} h"
    return duration_text(rest)


def _local(moment: datetime) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z")


def submission_date_problem(*, assignment: Assignment, at: datetime) -> str:
    """Why a new submission at `at` is refused by the assignment's dates ("" when it is not)."""
    if assignment.opens_at and at < assignment.opens_at:
        return (
            f"This assignment opens on {_local(assignment.opens_at)}; submissions are taken from then on. "
            "Come back then, or ask your instructor if it should be open already."
        )
    if assignment.late_policy == LatePolicy.REFUSE and is_late(assignment=assignment, at=at):
        return (
            f"This assignment was due on {_local(assignment.due_at)} and takes no late submissions, so the job "
            "was not submitted. If you need an extension, ask your instructor."
        )
    return ""


def is_late(*, assignment: Assignment, at: datetime) -> bool:
    """Submitted after the due date and its grace period."""
    closes = assignment.closes_at
    return closes is not None and at > closes


def assignment_dates(*, assignment: Assignment, now: datetime | None = None) -> dict[str, str | bool]:
    """What a student reads about the dates: opens, due, time left, and what happens after the due date."""
    now = now or timezone.now()
    facts: dict[str, str | bool] = {"has_dates": bool(assignment.opens_at or assignment.due_at)}
    if assignment.opens_at and now < assignment.opens_at:
        facts["opens"] = f"Opens in {time_left((assignment.opens_at - now).total_seconds())}"
    if assignment.due_at:
        closes = assignment.closes_at
        if now <= assignment.due_at:
            facts["due"] = f"Due in {time_left((assignment.due_at - now).total_seconds())}"
        elif now <= closes:
            facts["due"] = f"Past due; submissions count as on time for {time_left((closes - now).total_seconds())}"
        elif assignment.late_policy == LatePolicy.REFUSE:
            facts["due"] = "Closed: the due date has passed and late submissions are not taken"
        else:
            facts["due"] = "Past due: new submissions are marked late"
        facts["past_due"] = now > closes
    return facts
