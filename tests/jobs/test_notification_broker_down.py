"""A job that ends while the broker does not answer still mails its student: the worker's process marks the
job, and the resend sweep sends the mail task once the broker is back."""

import pytest

from jobs.models import Job, Status
from jobs.tasks import job_notify, job_notify_resend
from tests.conftest import job_row
from tests.http_helpers import celery_queue_clear, queued_tasks
from tests.service_account import as_service_account, free_port

pytestmark = pytest.mark.django_db(transaction=True)

FAIL_THE_JOB = """
from jobs.models import Job
from jobs.lifecycle import job_transition
job = Job.objects.get(pk={pk})
print(job_transition(job=job, to="failed", cause="Slurm's accounting reports FAILED, exit code 1."))
"""


def test_a_mail_task_the_broker_did_not_take_is_sent_once_it_is_back(
    settings,
    student,
    assignment,
    smtp_server,
):
    student.email = "student1@cs.example.edu"
    student.save(update_fields=["email"])
    job = job_row(student, assignment, status=Status.RUNNING, slurm_state="FAILED", exit_code=1)

    ended = as_service_account(
        FAIL_THE_JOB.format(pk=job.pk), settings, LABQUEUE_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"
    )

    assert ended.returncode == 0 and ended.stdout.strip() == "True", ended.stderr
    assert "Could not send the job_notify task" in ended.stderr
    job.refresh_from_db()
    assert job.status == Status.FAILED and job.enqueue_failed
    celery_queue_clear()

    job_notify_resend.apply()  # the beat's sweep, the broker answering again

    assert queued_tasks() == [("jobs.tasks.job_notify", [job.pk], {})]
    assert not Job.objects.get(pk=job.pk).enqueue_failed
    job_notify_resend.apply()
    assert len(queued_tasks()) == 1, "sent again once"
    job_notify.apply(args=[job.pk])
    [message] = smtp_server.wait_for(1)
    assert message["To"] == "student1@cs.example.edu"
