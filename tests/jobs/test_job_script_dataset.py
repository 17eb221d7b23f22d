"""The batch script of a submitted job names its course and assignment, and its data set's path when the student
chose one (none otherwise): what the worker hands to sbatch, as the job records it."""

from django.urls import reverse

from jobs.models import Job
from tests.conftest import submit_form


def submitted_script(client, student, **overrides) -> str:
    client.force_login(student)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(**overrides))
    assert response.status_code == 302
    return Job.objects.filter(user=student).latest("pk").script


def test_a_job_with_a_data_set_exports_its_path_and_one_without_exports_none(client, student, assignment, dataset):
    without = submitted_script(client, student)
    assignment.datasets.add(dataset)  # an assignment that offers data sets asks for one
    with_data = submitted_script(client, student, dataset=str(dataset.pk))

    assert f"export DATASET={dataset.path}\n" in with_data
    assert "DATASET" not in without
    assert "\n# CS101: Hello GPU\n" in without, "the script says what it is for whoever reads it on the cluster"
