"""A job submitted through the API is sent by the worker's path (jobs.dispatch) and is the same Slurm job as
the form's: same batch script, account, partition and resources, as Slurm itself reports them."""

import pytest
from django.urls import reverse

from jobs.models import Job
from tests.api.conftest import call
from tests.api.test_jobs import BODY, SUBMIT
from tests.behaviour_helpers import slurm
from tests.conftest import dispatch, submit_form

pytestmark = pytest.mark.slurm

FIELDS = ("Account", "Partition", "NumCPUs", "MinMemoryNode", "TimeLimit", "TresPerNode", "UserId", "JobName")


def slurm_view(job: Job) -> tuple[dict[str, str], str]:
    """Slurm's own record of the job (scontrol) and its batch script, the job's UUID left out."""
    line = slurm("scontrol", "-o", "show", "job", job.slurm_job_id)
    fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
    script = slurm("scontrol", "write", "batch_script", job.slurm_job_id, "-")
    shown = {name: fields.get(name, "").replace(str(job.uuid), "<uuid>") for name in FIELDS}
    return shown, script.replace(str(job.uuid), "<uuid>")


def test_a_job_submitted_through_the_api_is_the_same_slurm_job_as_the_forms(client, student, assignment, token_for):
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    by_form = Job.objects.get()
    client.logout()
    response = call(client, "post", SUBMIT, token_for(student), BODY)
    assert response.status_code == 201
    by_api = Job.objects.get(uuid=response.json()["uuid"])
    assert not by_api.slurm_job_id  # the request sent nothing to Slurm: the worker does

    by_form, by_api = dispatch(by_form), dispatch(by_api)

    assert by_form.slurm_job_id and by_api.slurm_job_id and by_form.slurm_job_id != by_api.slurm_job_id
    form_fields, form_script = slurm_view(by_form)
    api_fields, api_script = slurm_view(by_api)
    assert api_fields == form_fields
    assert form_fields["Account"] == "cs101" and form_fields["Partition"] == "gpu"
    assert api_script == form_script
    assert by_api.script == by_form.script
