"""What jobs tells the apps above it (worker side). jobs imports none of them: they connect to these signals.

- `check_finished`: a check has just reached DONE with its results (jobs.checks.checks_finish, once per check:
  after its compare-and-set succeeded), robustly: a listener that fails is logged and never stops the sync.
  Keyword argument `check_run`. The LMS app (lms) sends the gradebook
  score back to the LMS when it hears it.
"""

from django.dispatch import Signal

check_finished = Signal()
