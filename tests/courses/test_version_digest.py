"""A submission finds the assignment's current version by the digest the version keeps of its contents: any
change saved outside the form (a script edit, a data set added, a starter file) still makes a new version, and
a version kept before digests were is compared in full once and given its digest."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Assignment, AssignmentVersion, Dataset, StarterFile
from jobs.models import Job
from tests.conftest import submit_form

pytestmark = pytest.mark.django_db


def submit(client, student, **extra) -> Job:
    client.force_login(student)
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), **extra})
    assert response.status_code == 302, response.content.decode()
    return Job.objects.latest("created_at")


def test_a_change_saved_outside_the_form_makes_a_new_version_and_an_unchanged_assignment_does_not(
    client, student, assignment
):
    first = submit(client, student).assignment_version
    assert len(first.contents_digest) == 64
    assert submit(client, student).assignment_version == first

    Assignment.objects.filter(pk=assignment.pk).update(script_template="echo edited in the admin\n")
    edited = submit(client, student).assignment_version
    assert (edited.number, edited.script_template) == (2, "echo edited in the admin\n")

    dataset = Dataset.objects.create(course=assignment.course, name="Images", path="/var/lib/labqueue/datasets/img")
    assignment.datasets.add(dataset)
    with_dataset = submit(client, student, dataset=dataset.pk).assignment_version
    assert with_dataset.number == 3 and list(with_dataset.datasets.all()) == [dataset]

    StarterFile.objects.create(assignment=assignment, name="data.csv", file=SimpleUploadedFile("data.csv", b"1,2\n"))
    with_file = submit(client, student, dataset=dataset.pk).assignment_version
    assert with_file.number == 4 and [f.name for f in with_file.starter_files.all()] == ["data.csv"]
    assert submit(client, student, dataset=dataset.pk).assignment_version == with_file
    assert (
        len({first.contents_digest, edited.contents_digest, with_dataset.contents_digest, with_file.contents_digest})
        == 4
    )


def test_a_version_kept_before_digests_is_compared_in_full_and_given_its_digest(client, student, assignment):
    first = submit(client, student).assignment_version
    digest = first.contents_digest
    AssignmentVersion.objects.filter(pk=first.pk).update(contents_digest="")

    assert submit(client, student).assignment_version == first
    assert AssignmentVersion.objects.get(pk=first.pk).contents_digest == digest

    AssignmentVersion.objects.filter(pk=first.pk).update(contents_digest="")
    Assignment.objects.filter(pk=assignment.pk).update(check_script="test -s out.txt\n")
    newer = submit(client, student).assignment_version
    assert newer.number == 2 and newer.check_script == "test -s out.txt\n"
    assert AssignmentVersion.objects.get(pk=first.pk).contents_digest == ""
