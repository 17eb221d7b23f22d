"""Labs are scheduled against the reservable nodes of their course's cluster: a course on the site's other
cluster (lab2) counts lab2's nodes (LABQUEUE_RESERVABLE_NODES_BY_CLUSTER) and lab2's labs only."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import LabSession, Role
from tests.conftest import make_user

SOON = timezone.now().replace(second=0, microsecond=0) + timedelta(days=1)


@pytest.fixture(autouse=True)
def clusters(settings):
    settings.TIME_ZONE = "UTC"
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    settings.LABQUEUE_RESERVATION_STRATEGY = "nodes"
    settings.LABQUEUE_RESERVABLE_NODES = ["gpu1", "gpu2"]
    settings.LABQUEUE_RESERVABLE_NODES_BY_CLUSTER = {"lab2": ["gpu3", "gpu4"]}
    settings.LABQUEUE_LAB_MAX_NODES = 2


@pytest.fixture
def lab2_instructor(other_course):
    other_course.cluster = "lab2"
    other_course.save()
    instructor = make_user("instructor2", "instructor2")
    other_course.enrollments.create(user=instructor, role=Role.INSTRUCTOR)
    return instructor


def schedule(client, instructor, *, nodes: int):
    client.force_login(instructor)
    form = {
        "starts_at": SOON.strftime("%Y-%m-%dT%H:%M"),
        "ends_at": (SOON + timedelta(minutes=60)).strftime("%Y-%m-%dT%H:%M"),
        "nodes": str(nodes),
    }
    return client.post(reverse("courses:lab-list", args=["cs102"]), form)


def test_a_lab2_lab_fits_beside_a_lab_that_holds_every_reservable_node_of_lab(
    client, course, lab2_instructor, other_course
):
    LabSession.objects.create(course=course, starts_at=SOON, ends_at=SOON + timedelta(minutes=60), nodes=2)

    assert schedule(client, lab2_instructor, nodes=2).status_code == 302

    assert LabSession.objects.filter(course=other_course, nodes=2).exists()


def test_a_lab2_lab_is_refused_when_lab2s_labs_hold_its_nodes_naming_only_those(
    client, course, lab2_instructor, other_course
):
    LabSession.objects.create(course=course, starts_at=SOON, ends_at=SOON + timedelta(minutes=60), nodes=2)
    LabSession.objects.create(course=other_course, starts_at=SOON, ends_at=SOON + timedelta(minutes=60), nodes=1)

    response = schedule(client, lab2_instructor, nodes=2)

    assert response.status_code == 400
    assert "other labs (CS102) already reserve 1 of the 2 reservable nodes; this lab asks for 2 more." in (
        response.content.decode()
    )
    assert LabSession.objects.count() == 2


def test_a_course_on_a_cluster_without_reservable_nodes_is_told_it_has_none(client, lab2_instructor, settings):
    settings.LABQUEUE_RESERVABLE_NODES_BY_CLUSTER = {}

    response = schedule(client, lab2_instructor, nodes=1)

    assert response.status_code == 400
    assert "The cluster has 0 reservable nodes; this lab asks for 1." in response.content.decode()
    assert not LabSession.objects.exists()


def test_a_lab_reserved_on_lab2_still_holds_lab2s_nodes_after_its_course_moved_to_lab(
    client, lab2_instructor, other_course
):
    held = LabSession.objects.create(
        course=other_course,
        starts_at=SOON - timedelta(minutes=30),
        ends_at=SOON + timedelta(minutes=30),
        nodes=2,
        state=LabSession.State.RESERVED,
        reservation_active=True,
        reserved_nodes="gpu3,gpu4",
        reserved_on="lab2",  # lab2 holds its reservation
    )
    other_course.cluster = ""  # CS102 moves to lab; its reserved lab stays on lab2 until it ends
    other_course.save()

    # lab's nodes are all free for another lab of CS102's, now on lab ...
    assert schedule(client, lab2_instructor, nodes=2).status_code == 302
    assert LabSession.objects.exclude(pk=held.pk).get().nodes == 2
    # ... and lab2's are still held: a lab2 course is told so.
    other_course.cluster = "lab2"
    other_course.save()
    LabSession.objects.exclude(pk=held.pk).delete()
    response = schedule(client, lab2_instructor, nodes=1)
    assert response.status_code == 400
    assert "already reserve 2 of the 2 reservable nodes" in response.content.decode()
