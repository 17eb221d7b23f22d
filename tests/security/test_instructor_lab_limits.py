"""Lab sessions stay within operations staff's limits (LABQUEUE_LAB_MAX_MINUTES, _MAX_NODES, _MAX_DAYS_AHEAD):
an instructor's request beyond them is a form error on the labs page. Nothing is saved, and no lab tick
(the only thing that makes Slurm reservations) is asked for, so no reservation can follow."""

import html
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from courses.models import LabSession

WHO_TO_ASK = "ask hpc-help@example.edu."


@pytest.fixture(autouse=True)
def lab_limits(settings):
    settings.TIME_ZONE = "UTC"
    settings.LABQUEUE_RESERVATION_STRATEGY = "nodes"
    settings.LABQUEUE_RESERVABLE_NODES = ["gpu1", "gpu2"]
    settings.LABQUEUE_LAB_MAX_MINUTES = 240
    settings.LABQUEUE_LAB_MAX_NODES = 1
    settings.LABQUEUE_LAB_MAX_DAYS_AHEAD = 120
    settings.LABQUEUE_OPERATIONS_CONTACT = "hpc-help@example.edu"


def tomorrow():
    return timezone.now().replace(second=0, microsecond=0) + timedelta(days=1)


def schedule(client, instructor, start, *, minutes: int, nodes: int, capture):
    fmt = "%Y-%m-%dT%H:%M"
    data = {
        "starts_at": start.strftime(fmt),
        "ends_at": (start + timedelta(minutes=minutes)).strftime(fmt),
        "nodes": str(nodes),
    }
    client.force_login(instructor)
    with capture() as callbacks:
        response = client.post(reverse("courses:lab-list", args=["cs101"]), data)
    return response, callbacks


def test_a_365_day_lab_on_every_reservable_node_is_refused(
    client, instructor, course, django_capture_on_commit_callbacks
):
    response, callbacks = schedule(
        client, instructor, tomorrow(), minutes=365 * 24 * 60, nodes=2, capture=django_capture_on_commit_callbacks
    )
    assert response.status_code == 400
    text = html.unescape(response.content.decode())
    assert "A lab may last at most 240 minutes (a limit set by operations staff); this one lasts 525600." in text
    assert "A lab may reserve at most 1 node (a limit set by operations staff); this one asks for 2." in text
    assert WHO_TO_ASK in text
    assert not LabSession.objects.exists()
    assert callbacks == [], "no lab tick is queued, so the worker makes no reservation"


def test_a_lab_longer_than_the_limit_is_refused(client, instructor, course, django_capture_on_commit_callbacks):
    response, callbacks = schedule(
        client, instructor, tomorrow(), minutes=241, nodes=1, capture=django_capture_on_commit_callbacks
    )
    assert response.status_code == 400
    assert "A lab may last at most 240 minutes" in html.unescape(response.content.decode())
    assert not LabSession.objects.exists() and callbacks == []


def test_a_lab_on_more_nodes_than_the_limit_is_refused(client, instructor, course, django_capture_on_commit_callbacks):
    response, callbacks = schedule(
        client, instructor, tomorrow(), minutes=60, nodes=2, capture=django_capture_on_commit_callbacks
    )
    assert response.status_code == 400
    assert "A lab may reserve at most 1 node" in html.unescape(response.content.decode())
    assert not LabSession.objects.exists() and callbacks == []


def test_a_lab_scheduled_too_far_ahead_is_refused(client, instructor, course, django_capture_on_commit_callbacks):
    start = tomorrow() + timedelta(days=400)
    response, callbacks = schedule(
        client, instructor, start, minutes=60, nodes=1, capture=django_capture_on_commit_callbacks
    )
    assert response.status_code == 400
    text = html.unescape(response.content.decode())
    assert (
        "Labs can be scheduled at most 120 days ahead (a limit set by operations staff); "
        f"this one starts on {start:%Y-%m-%d}." in text
    )
    assert not LabSession.objects.exists() and callbacks == []


def test_a_lab_within_the_limits_is_still_scheduled(client, instructor, course, django_capture_on_commit_callbacks):
    response, _ = schedule(
        client, instructor, tomorrow(), minutes=240, nodes=1, capture=django_capture_on_commit_callbacks
    )
    assert response.status_code == 302
    assert LabSession.objects.get().nodes == 1
