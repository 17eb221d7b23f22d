"""Instructors' hints: patterns checked at save time and matched with a time bound."""

import regex
from django.db.models import Q

from courses.models import Hint

MATCH_SECONDS = 0.05
# Inputs on which backtracking patterns blow up; a pattern slow on them is refused at save time.
PROBES = ("a" * 30 + "!", " ".join(["word"] * 3000) + "!", "x" * 5000 + "\n")


def pattern_problem(pattern: str) -> str:
    """Why an instructor's pattern cannot be used, or '' when it is fine."""
    try:
        compiled = regex.compile(pattern)
    except regex.error as error:
        return f"This is not a valid regular expression ({error})."
    try:
        for probe in PROBES:
            compiled.search(probe, timeout=MATCH_SECONDS * 4)
    except TimeoutError:
        return "This pattern takes too long to search (it backtracks badly); simplify it."
    return ""


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
                if not regex.search(hint.pattern, text, timeout=MATCH_SECONDS):
                    continue
            except TimeoutError:
                continue
        found.append(hint)
    return found
