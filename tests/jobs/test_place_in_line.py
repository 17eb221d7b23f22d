"""A pending job's place in line is told as what the student waits behind: the jobs ahead of it in its
partition, or for a lab job the lab's jobs ahead of it (squeue ranks it within its reservation)."""

from jobs.explanations import _place_in_line
from jobs.models import Job, Status


def pending(**fields) -> Job:
    return Job(status=Status.PENDING, partition="gpu", **fields)


def test_the_first_pending_job_of_a_partition_is_next_to_start_there():
    assert _place_in_line(pending(queue_position=1)) == " Next to start in the gpu partition."


def test_a_later_job_is_told_how_many_jobs_are_ahead_of_it_in_its_partition():
    assert _place_in_line(pending(queue_position=2)) == " 1 job ahead of yours in the gpu partition."
    assert _place_in_line(pending(queue_position=4)) == " 3 jobs ahead of yours in the gpu partition."


def test_a_lab_job_is_told_its_place_in_the_lab():
    assert _place_in_line(pending(queue_position=1, reservation="lab-cs101-1")) == " Next to start in your lab."
    assert _place_in_line(pending(queue_position=3, reservation="lab-cs101-1")) == " 2 jobs ahead of yours in your lab."


def test_a_job_without_a_rank_says_nothing_about_its_place():
    assert _place_in_line(pending(queue_position=None)) == ""
