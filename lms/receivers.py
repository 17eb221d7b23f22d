"""What the LMS app does when jobs says a check finished (worker side; connected in lms.apps)."""

from django.db import transaction

from lms import grades
from lms.tasks import score_post


def check_finished(sender, check_run, **kwargs) -> None:
    """A scored check: once its change commits, send the student's score to each LMS course that takes scores."""
    if check_run.score is None:
        return
    job = check_run.job
    for context in grades.score_contexts(assignment=job.assignment):
        transaction.on_commit(lambda context=context: score_post.delay(job.user_id, job.assignment_id, context.pk))
