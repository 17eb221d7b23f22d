"""Instructors' hints: patterns checked at save time and matched with a time bound."""

from django.db.models import Q

from courses.models import Hint
from courses.patterns import MATCH_SECONDS, PatternTooSlow, pattern_problem, pattern_search

__all__ = ["MATCH_SECONDS", "hints_matching", "pattern_problem"]


def hints_matching(*, job, text: str) -> list[Hint]:
    """Hints of the job's course (or its assignment) whose state and pattern match.

    `text` is a bounded tail of the job's output; each search stops after MATCH_SECONDS.
    """
    assignment = job.assignment
    hints = Hint.objects.filter(
        Q(course_id=assignment.course_id, assignment__isnull=True) | Q(assignment_id=assignment.pk)
    )
    found = []
    for hint in hints.order_by("created_at", "pk"):
        if hint.state and hint.state != job.slurm_state:
            continue
        if hint.pattern:
            try:
                if not pattern_search(hint.pattern, text):
                    continue
            except PatternTooSlow:
                continue
        found.append(hint)
    return found
