"""A student whose portal account has no cluster username yet is told exactly why no job can run and whom to ask."""

from django.urls import reverse

from courses.models import Role
from jobs.models import Job
from tests.conftest import make_user, submit_form

NOT_LINKED = (
    "Your portal account is not linked to a cluster username yet, so jobs cannot run as you. "
    "Ask the course staff to add your cluster username."
)


def test_a_student_without_a_cluster_username_is_refused_with_the_reason_and_whom_to_ask(client, course, assignment):
    newcomer = make_user("newcomer")
    course.enrollments.create(user=newcomer, role=Role.STUDENT)
    client.force_login(newcomer)

    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form())

    assert response.status_code == 400
    assert response.context["form"].non_field_errors() == [NOT_LINKED]
    assert not Job.objects.exists()
