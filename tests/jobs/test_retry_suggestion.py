"""The retry page fills in resources from what went wrong: more memory for a job that ran out of it, and for a
job Slurm refused for its time limit the minutes it asked for, never more than the course allows."""

from django.urls import reverse

from jobs.models import Job, Status
from tests.conftest import job_row

TIME_LIMIT_REFUSED = (
    "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)"
)


def retry_page(client, job: Job) -> str:
    client.force_login(job.user)
    response = client.get(reverse("jobs:job-retry", args=[job.uuid]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_job_refused_for_its_time_limit_is_offered_the_minutes_it_asked_for(client, student, assignment):
    job = job_row(student, assignment, status=Status.REJECTED, minutes=20, message=TIME_LIMIT_REFUSED)

    page = retry_page(client, job)

    assert "The job asks for more time than the cluster allows" in page
    assert 'name="minutes" value="20"' in page


def test_a_job_refused_for_its_time_limit_is_offered_no_more_minutes_than_the_course_allows(
    client, student, course, assignment
):
    job = job_row(student, assignment, status=Status.REJECTED, minutes=30, message=TIME_LIMIT_REFUSED)
    course.max_minutes_per_job = 25
    course.save()

    assert 'name="minutes" value="25"' in retry_page(client, job)


def test_a_job_that_ran_out_of_memory_is_offered_twice_its_memory_up_to_the_courses_cap(client, student, assignment):
    small = job_row(student, assignment, status=Status.FAILED, slurm_state="OUT_OF_MEMORY", mem_mb=1500)
    large = job_row(student, assignment, status=Status.FAILED, slurm_state="OUT_OF_MEMORY", mem_mb=3000)

    assert 'name="mem_mb" value="3000"' in retry_page(client, small)
    assert 'name="mem_mb" value="4000"' in retry_page(client, large), "the course allows 4000 MB per job"
