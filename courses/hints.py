"""Instructors' hints: patterns checked at save time and matched with a time bound, per pattern and per job.

Each pattern passed the save-time probe, but a probe cannot cover every log: many hints, each slow on one
job's output, would add up. So one job's hints share HINTS_MATCH_SECONDS in all (the patterns not reached
in that time are not tried, and the log says so), and a course holds at most LABQUEUE_MAX_HINTS_PER_COURSE.
Web side: the job page's explanation.
"""

import logging
import time

from django.db.models import Q

from courses.models import Hint
from courses.patterns import MATCH_SECONDS, PatternTooSlow, pattern_problem, pattern_search

__all__ = ["HINTS_MATCH_SECONDS", "MATCH_SECONDS", "hints_matching", "pattern_problem"]

log = logging.getLogger(__name__)

#: The time all of one job's hint patterns may take together.
HINTS_MATCH_SECONDS = 0.2


def hints_matching(*, job, text: str) -> list[Hint]:
    """Hints of the job's course (or its assignment) whose state and pattern match.

    `text` is a bounded tail of the job's output; each search stops after MATCH_SECONDS, and all of them
    after HINTS_MATCH_SECONDS.
    """
    assignment = job.assignment
    hints = Hint.objects.filter(
        Q(course_id=assignment.course_id, assignment__isnull=True) | Q(assignment_id=assignment.pk)
    )
    deadline = time.monotonic() + HINTS_MATCH_SECONDS
    found, untried = [], 0
    for hint in hints.order_by("created_at", "pk"):
        if hint.state and hint.state != job.slurm_state:
            continue
        if hint.pattern:
            left = deadline - time.monotonic()
            if left <= 0:
                untried += 1
                continue
            try:
                if not pattern_search(hint.pattern, text, seconds=left):
                    continue
            except PatternTooSlow:
                continue
        found.append(hint)
    if untried:
        log.warning(
            "Hints of job %s: %d pattern(s) not tried, the job's %.1f s for hint matching was used up (slow "
            "patterns in course %s)",
            job.uuid,
            untried,
            HINTS_MATCH_SECONDS,
            assignment.course_id,
        )
    return found
