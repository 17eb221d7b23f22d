"""A TA's retry through the API of a job whose student has left the course is refused naming the student, not
as if the TA had left: the same words the retry page uses."""

from courses.models import Enrollment
from jobs.models import Job, Status
from tests.api.conftest import call, problem
from tests.api.test_jobs import BODY, SUBMIT


def test_a_tas_retry_for_a_student_dropped_from_the_course_is_refused_naming_the_student(
    client, student, ta, assignment, token_for
):
    job = Job.objects.get(uuid=call(client, "post", SUBMIT, token_for(student), BODY).json()["uuid"])
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED, slurm_job_id="4242")
    Enrollment.objects.filter(user=student).delete()

    response = call(client, "post", f"/api/v1/jobs/{job.uuid}/retry", token_for(ta))

    assert response.status_code == 403
    assert problem(response)["detail"].startswith(f"{student} is no longer enrolled in ")
    assert not Job.objects.filter(retry_of=job).exists()
