"""A failed job's explanation says who to contact when the failure keeps happening; other jobs' do not."""

from django.urls import reverse

from jobs.models import Status
from tests.conftest import job_row

CONTACT = "the CS help desk at help@cs.example.edu"


def test_a_failed_jobs_page_names_the_support_contact(client, settings, student, assignment):
    settings.LABQUEUE_SUPPORT_CONTACT = CONTACT
    job = job_row(student, assignment, status=Status.FAILED, slurm_state="FAILED", exit_code=1)
    client.force_login(student)

    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()

    assert 'data-key="nonzero-exit"' in page
    assert f'<p id="support-contact">If this keeps happening, contact {CONTACT}.</p>' in page


def test_a_job_that_waits_in_the_queue_names_no_contact_in_its_explanation(client, settings, student, assignment):
    settings.LABQUEUE_SUPPORT_CONTACT = CONTACT
    job = job_row(student, assignment, status=Status.PENDING, slurm_state="PENDING", reason="Priority")
    client.force_login(student)

    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()

    assert 'data-key="waiting-queue"' in page
    assert 'id="support-contact"' not in page
