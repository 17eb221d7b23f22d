"""slurmdbd is stopped for real while a job runs and leaves the queue: the portal does not know how it ended,
and no surface (the job page and its title, the live part, My jobs, the home page's active jobs, the TAs'
list) calls it Running or Waiting: each says it finished and waits for the cluster's accounting."""

import time
from contextlib import suppress

import pytest
from django.urls import reverse

import slurm
from jobs import dispatch
from jobs.models import Status
from slurm import states
from tests.faults.test_services_stop import stopped, submitted

pytestmark = pytest.mark.slurm

AWAITING = "Finished, waiting for the cluster&#x27;s accounting"


def test_a_job_that_left_the_queue_without_accounting_is_finished_waiting_on_every_surface(
    client, student, ta, assignment
):
    job = submitted(client, student)
    with stopped("slurmdbd"):
        dispatch.job_dispatch(job_id=job.pk)  # sbatch needs only the controller
        job.refresh_from_db()
        deadline = time.monotonic() + 120
        while (entry := slurm.queue().get(job.slurm_job_id)) is not None and states.is_live(entry.state):
            assert time.monotonic() < deadline, "the job never finished"
            with suppress(slurm.SlurmUnavailable):  # it may leave between the two calls: sacct is down
                dispatch.jobs_sync()  # sees it pending or running, as a sync cycle would
            time.sleep(0.2)
        with pytest.raises(slurm.SlurmUnavailable):
            dispatch.jobs_sync()
        job.refresh_from_db()
        assert job.status in (Status.PENDING, Status.RUNNING) and job.left_queue_at is not None
        left = job.left_queue_at
        with pytest.raises(slurm.SlurmUnavailable):
            dispatch.jobs_sync()
        job.refresh_from_db()
        assert job.left_queue_at == left, "when the job left the queue is kept, not moved on at every cycle"

        page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
        live = client.get(reverse("jobs:job-status", args=[job.uuid])).content.decode()
        mine = client.get(reverse("jobs:job-list")).content.decode()
        active = client.get(reverse("jobs:active-jobs")).content.decode()
        client.force_login(ta)
        course = client.get(reverse("jobs:course-jobs", args=["cs101"])).content.decode()
        for name, text in {"job page": page, "live part": live, "My jobs": mine, "active jobs": active}.items():
            assert AWAITING in text, f"{name} does not say the job finished and waits for the accounting"
            assert "status-running" not in text and "status-pending" not in text, name
        assert AWAITING in course and "status-running" not in course and "status-pending" not in course
        assert "Slurm: RUNNING" not in page and "Slurm: PENDING" not in page
        assert "Slurm: left the queue" in page
        assert AWAITING in page.split("</title>")[0]

    deadline = time.monotonic() + 120  # slurmctld hands slurmdbd the records it kept meanwhile
    while job.status != Status.COMPLETED:
        assert time.monotonic() < deadline, f"still {job.status}"
        dispatch.jobs_sync()
        job.refresh_from_db()
        time.sleep(0.5)
    client.force_login(student)
    assert AWAITING not in client.get(reverse("jobs:job-list")).content.decode()
