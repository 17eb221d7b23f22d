"""An assignment's attempt cap counts the student's own attempts at that assignment: neither a classmate's jobs
nor the student's jobs of another assignment use it up."""

from django.urls import reverse

from courses.models import Assignment
from jobs.models import Job
from tests.conftest import job_row, submit_form


def test_the_attempt_cap_counts_only_this_students_attempts_at_this_assignment(
    client, student, classmate, course, assignment
):
    assignment.max_attempts = 1
    assignment.save()
    other = Assignment.objects.create(course=course, slug="other", title="Other", script_template="echo hi\n", gpus=0)
    job_row(classmate, assignment)
    job_row(student, other)
    client.force_login(student)

    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())

    assert response.status_code == 302
    assert Job.objects.filter(user=student, assignment=assignment).count() == 1
