"""What a finished job used, against what it asked for, on its page; a right-sized request suggested in plain
words only for a COMPLETED job that clearly asked for too much, within the course's limits; the resubmit page
prefilled with it. The figures are as the sync records them (jobs.dispatch._collect_usage)."""

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.efficiency import job_use, memory_text
from jobs.models import Job, Status
from tests.conftest import job_row


def finished(student, assignment, *, status=Status.COMPLETED, **fields) -> Job:
    """A job that ran in Slurm and finished, with its usage collected."""
    values = {
        "status": status,
        "slurm_job_id": "4242",
        "slurm_state": status.upper(),
        "cpus": 4,
        "mem_mb": 4000,
        "minutes": 30,
        "elapsed_seconds": 6,
        "cpu_seconds_used": 5.2,
        "max_rss_mb": 52,
        "usage_collected_at": timezone.now(),
        "ended_at": timezone.now(),
    }
    return job_row(student, assignment, **{**values, **fields})


def test_a_job_that_kept_one_of_four_cpus_busy_and_used_little_memory_and_time_gets_a_smaller_request(
    student, assignment
):
    use = job_use(finished(student, assignment))

    assert use.cpu_percent == 22 and round(use.cpus_busy, 2) == 0.87
    assert use.mem_percent == 1 and use.time_percent == 0
    assert use.gpu_util_percent is None
    assert use.suggestion.resources == {"gpus": 0, "cpus": 1, "mem_mb": 256, "minutes": 5}
    assert use.suggestion.sentences == [
        "You asked for 3.9 GB of memory and used at most 52 MB; asking for 256 MB lets the job start sooner.",
        "You asked for 4 CPUs and the job kept about 1 busy; asking for 1 lets the job start sooner and leaves "
        "the others to your classmates.",
        "You asked for 30 minutes and the job ran 6 seconds; asking for 5 minutes lets Slurm fit it in sooner.",
    ]
    assert use.suggestion.query == "gpus=0&cpus=1&mem_mb=256&minutes=5"


def test_sixteen_gigabytes_asked_and_one_point_two_used_suggests_two(student, assignment):
    assignment.course.max_mem_mb_per_job = 16384
    assignment.course.save()
    job = finished(student, assignment, mem_mb=16384, max_rss_mb=1229, cpus=1, cpu_seconds_used=5.9)

    use = job_use(job)

    assert use.suggestion.resources["mem_mb"] == 2048
    assert use.suggestion.sentences[0] == (
        "You asked for 16 GB of memory and used at most 1.2 GB; asking for 2 GB lets the job start sooner."
    )


def test_a_job_that_used_what_it_asked_for_gets_no_suggestion(student, assignment):
    job = finished(
        student, assignment, cpus=1, mem_mb=500, max_rss_mb=430, minutes=5, elapsed_seconds=200, cpu_seconds_used=198
    )

    use = job_use(job)

    assert use.cpu_percent == 99 and use.mem_percent == 86 and use.time_percent == 67
    assert use.suggestion is None


def test_a_failed_job_shows_its_figures_but_gets_no_suggestion(student, assignment):
    use = job_use(finished(student, assignment, status=Status.FAILED))

    assert use.cpu_percent == 22
    assert use.suggestion is None


def test_a_suggestion_never_goes_below_the_floors_nor_asks_what_was_already_asked(student, assignment):
    job = finished(student, assignment, cpus=1, mem_mb=300, max_rss_mb=10, minutes=5, elapsed_seconds=1)

    assert job_use(job).suggestion is None  # 256 MB and 5 minutes are the floors; 1 CPU is the least


def test_a_suggestion_stays_within_the_course_limits(student, assignment):
    """A course whose limit is below what the rounding gives: the limit is suggested."""
    assignment.course.max_minutes_per_job = 20
    assignment.course.save()
    job = finished(student, assignment, cpus=1, minutes=20, elapsed_seconds=290, max_rss_mb=None)

    assert job_use(job).suggestion.resources["minutes"] == 10  # 2 x 4.8 min, rounded up to 5-minute steps

    job = finished(student, assignment, cpus=1, minutes=60, elapsed_seconds=600, max_rss_mb=None)
    assert job_use(job).suggestion.resources["minutes"] == 20  # 20 min would round to 20; the course allows 20


def test_nothing_is_shown_before_the_usage_is_collected(student, assignment):
    assert job_use(finished(student, assignment, usage_collected_at=None)) is None
    assert job_use(job_row(student, assignment, status=Status.PENDING, slurm_job_id="1")) is None


@pytest.mark.parametrize(("mb", "text"), [(52, "52 MB"), (1229, "1.2 GB"), (16384, "16 GB"), (4000, "3.9 GB")])
def test_memory_in_words(mb, text):
    assert memory_text(mb) == text


def test_the_job_page_shows_what_the_job_used_and_a_one_click_resubmit_with_the_suggestion(client, student, assignment):
    job = finished(student, assignment, gpus=1)
    client.force_login(student)

    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()

    assert "What your job used" in page
    assert "22% of 4 CPUs (about 0.9 kept busy)" in page
    assert "52 MB of the 3.9 GB asked for (1%)" in page
    assert "not measured on this cluster" in page
    link = re.search(r'href="([^"]+)" id="resubmit-suggested"', page).group(1)
    assert link == reverse("jobs:job-resubmit", args=[job.uuid]) + "?gpus=1&amp;cpus=1&amp;mem_mb=256&amp;minutes=5"


def test_course_staff_see_the_figures_and_the_suggestion_without_the_resubmit_link(client, student, ta, assignment):
    job = finished(student, assignment)
    client.force_login(ta)

    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()

    assert "What the job used" in page and "asking for 256 MB" in page
    assert "resubmit-suggested" not in page


def test_a_finished_job_whose_usage_is_not_collected_yet_says_it_comes_shortly(client, student, assignment):
    job = finished(student, assignment, usage_collected_at=None)
    client.force_login(student)

    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()

    assert 'id="job-use-later"' in page and "What your job used" not in page


def test_the_resubmit_page_starts_with_the_suggested_resources_brought_within_the_course_limits(
    client, student, assignment
):
    job = finished(student, assignment)
    client.force_login(student)
    url = reverse("jobs:job-resubmit", args=[job.uuid])

    page = client.get(url + "?gpus=0&cpus=1&mem_mb=256&minutes=5").content.decode()

    assert 'id="suggested-resources"' in page
    for name, value in {"cpus": 1, "mem_mb": 256, "minutes": 5}.items():
        assert re.search(rf'name="{name}" value="{value}"', page), name

    page = client.get(url + "?cpus=99&mem_mb=5&minutes=-3&gpus=x").content.decode()
    assert re.search(r'name="cpus" value="4"', page)  # the course's limit
    assert re.search(r'name="mem_mb" value="100"', page)  # the form's least
    assert re.search(r'name="minutes" value="30"', page)  # not a number: the attempt's own


def test_someone_elses_job_cannot_be_resubmitted_through_a_suggestion_link(client, student, outsider, assignment):
    job = finished(student, assignment)
    client.force_login(outsider)

    response = client.get(reverse("jobs:job-resubmit", args=[job.uuid]) + "?cpus=1")

    assert response.status_code == 404
