"""The sync reads what finished jobs used in at most one sacct per cycle, however many are waiting for it (the
rest in the next cycles), and a sacct that fails does not fail the sync: the next cycle tries again."""

import logging
from collections import Counter

import pytest
from django.utils import timezone

from jobs import dispatch
from jobs.models import Job, Status
from slurm import runner
from tests.conftest import job_row


def finished_rows(student, assignment, count: int, *, first_id: int = 990_000_000) -> list[Job]:
    """Finished portal jobs whose usage is not collected; sacct knows none of these ids."""
    return [
        job_row(student, assignment, status=Status.COMPLETED, slurm_job_id=str(first_id + n), ended_at=timezone.now())
        for n in range(count)
    ]


def sync_commands() -> Counter:
    with runner.command_log() as commands:
        dispatch.jobs_sync()
    return Counter(command.tool for command in commands)


@pytest.mark.slurm
def test_one_sacct_reads_at_most_a_batch_of_finished_jobs_and_the_rest_come_next_cycle(student, assignment):
    finished_rows(student, assignment, dispatch.USAGE_BATCH + 50)

    assert sync_commands() == Counter({"sacct": 1})
    assert Job.objects.filter(usage_collected_at=None).count() == 50
    assert sync_commands() == Counter({"sacct": 1})
    assert Job.objects.filter(usage_collected_at=None).count() == 0
    # A job sacct does not know (purged from slurmdbd) is not asked about again: it has nothing to tell.
    assert sync_commands() == Counter()
    assert Job.objects.filter(cpu_seconds_used=None, max_rss_mb=None).count() == dispatch.USAGE_BATCH + 50


def test_a_sacct_that_fails_leaves_the_usage_for_the_next_cycle_without_failing_the_sync(
    settings, tmp_path, student, assignment, caplog
):
    settings.SLURM_BIN_DIR = str(tmp_path)  # no sacct there: the command really fails to start
    finished_rows(student, assignment, 2)

    with caplog.at_level(logging.WARNING, logger="jobs.dispatch"):
        dispatch.jobs_sync()

    assert Job.objects.filter(usage_collected_at=None).count() == 2
    assert "What 2 finished jobs used was not read" in caplog.text
