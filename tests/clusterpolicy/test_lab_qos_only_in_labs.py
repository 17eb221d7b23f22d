"""The site's lab QOS (LABQUEUE_LAB_QOS, which may preempt research work) goes with a job only inside a lab: any other
job is sent with its course's QOS, so a site with preemption does not let every course job preempt research."""

import pytest
from django.urls import reverse

from jobs.models import Job, Status
from tests.behaviour_helpers import slurm, slurm_cleanup
from tests.conftest import dispatch, submit_form

pytestmark = pytest.mark.slurm


def test_outside_a_lab_a_job_is_sent_with_its_courses_qos_where_the_site_has_a_lab_qos(
    client, settings, student, assignment
):
    settings.LABQUEUE_LAB_QOS = "coursework"
    client.force_login(student)
    with slurm_cleanup():
        assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
        job = dispatch(Job.objects.get())

        assert job.status == Status.PENDING and job.reservation == ""
        qos = slurm("squeue", "-h", "-t", "all", "-j", job.slurm_job_id, "-o", "%q").split()
        assert qos == ["normal"], "the course's QOS (none set: the association's default), not the lab's"
