"""A course naming an existing Slurm account that LabQueue did not make (the lab's research group's, named in an
instructor's course copy): the association reconciliation, which runs with Slurm admin rights, leaves it alone and
says so. Otherwise an instructor could have the portal add students to a research account, remove its users and
rewrite its limits (docs/security.md: the portal writes only to course accounts it manages)."""

import pytest
from django.urls import reverse

from clusterpolicy.associations import associations_reconcile
from courses.models import Course, Enrollment, Role
from slurm import accounts

pytestmark = pytest.mark.slurm


def research_on_lab() -> list[accounts.Assoc]:
    return sorted(accounts.assoc_list(cluster="lab", accounts=["research"]), key=lambda assoc: assoc.user)


def test_a_course_copy_naming_the_research_account_leaves_that_account_alone(client, instructor, course, student):
    before = research_on_lab()
    client.force_login(instructor)
    form = {"code": "CS101", "title": "Next", "term": "Spring", "slug": "cs101-spring", "slurm_account": "research"}
    copied = client.post(reverse("courses:course-copy", args=["cs101"]), form)
    course = Course.objects.get(slug="cs101-spring")
    Enrollment.objects.create(user=student, course=course, role=Role.STUDENT)
    Course.objects.filter(pk=course.pk).update(max_gpus_course=1, max_queued_jobs_per_student=1)

    run = associations_reconcile(course_slugs=["cs101-spring"], trigger="test")

    assert copied.status_code == 302
    assert research_on_lab() == before  # no student added, no one removed, no limit written
    assert run.changes == []
    assert [(row["account"], row["user"]) for row in run.unmanaged] == [("research", "")]
    assert "was not made by LabQueue (organization research): left alone" in run.unmanaged[0]["why"]
    assert "set organization=labqueue" in run.unmanaged[0]["why"]


def test_an_account_of_labqueues_own_is_still_reconciled(instructor, course, student):
    # cs101, made by scripts/labcluster as LabQueue makes course accounts (organization labqueue)
    Enrollment.objects.filter(course=course).delete()
    Enrollment.objects.create(user=student, course=course, role=Role.STUDENT)

    run = associations_reconcile(course_slugs=[course.slug], dry_run=True, trigger="test")

    assert {row["account"] for row in run.unmanaged} <= {"cs101"}
    assert not any("not made by LabQueue" in row["why"] for row in run.unmanaged)
    assert run.courses == ["cs101"]
