"""Parameter values can never change the script's structure or its resources."""

import uuid
from pathlib import Path

import pytest
from django.urls import reverse

import slurm
from jobs.models import Job, Status
from tests.conftest import dispatch, submit_form, wait_for_status

EXPECTED_SBATCH = [
    "#SBATCH --gres=gpu:1",
    "#SBATCH --nodes=1",
    "#SBATCH --ntasks=1",
    "#SBATCH --cpus-per-task=1",
    "#SBATCH --mem=500M",
    "#SBATCH --time=00:05:00",
]

REFUSED = [
    ("param_EPOCHS", "2; touch /tmp/x"),
    ("param_EPOCHS", "$(id)"),
    ("param_RATE", "0.5`id`"),
    ("param_RATE", "nan"),
    ("param_SIZE", "small\n#SBATCH --gres=gpu:2"),
    ("param_SIZE", "large; id"),
    ("param_NAME", "run\n#SBATCH --gres=gpu:2"),
    ("param_NAME", "run\rid"),
    ("gpus", "1\n#SBATCH --gres=gpu:2"),
]


@pytest.mark.parametrize(("field", "value"), REFUSED)
def test_injection_attempts_are_refused_with_a_message_and_nothing_is_submitted(
    client, student, assignment, field, value
):
    client.force_login(student)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(**{field: value}))
    assert response.status_code == 400
    assert b"errorlist" in response.content
    assert not Job.objects.exists()


@pytest.mark.slurm
def test_shell_syntax_in_a_string_value_reaches_the_job_as_plain_text(client, student, assignment):
    marker = Path(f"/tmp/lqi-{uuid.uuid4().hex[:8]}")
    value = f"x'; touch {marker}; echo '$(touch {marker}) `touch {marker}` #SBATCH --gres=gpu:2"
    client.force_login(student)
    client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(param_NAME=value))
    job = Job.objects.get()

    assert [line for line in job.script.splitlines() if line.startswith("#SBATCH")] == EXPECTED_SBATCH
    assert sum(1 for line in job.script.splitlines() if "touch" in line) == 1

    job = wait_for_status(dispatch(job), Status.COMPLETED)
    output = Path(job.workdir, "job.out").read_text()
    assert f"name={value}\n" in output
    assert not marker.exists()
    record = slurm.accounting(job_ids=[job.slurm_job_id])[job.slurm_job_id]
    assert record.gpus == 1
