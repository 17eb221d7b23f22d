"""A weekly lab: its sessions are made at once at the same local time each week (across a change of daylight
saving time), skipped dates left out, all checked like single labs and refused whole when one collides, and the
rest of a series cancelled in one step."""

import html
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from clusterpolicy.labs import reservation_name
from courses.models import LabSeries, LabSession
from courses.services import lab_series_dates
from jobs.tasks import labs_tick
from tests.behaviour_helpers import reservation_text, slurm, wait_until

NEW_YORK = ZoneInfo("America/New_York")
State = LabSession.State


def labs_url(slug="cs101") -> str:
    return reverse("courses:lab-list", args=[slug])


def series_form(**overrides) -> dict:
    # Tuesdays in March 2027, around the United States' change to summer time (Sunday 14 March).
    data = {
        "weekly": "1",
        "weekday": "1",
        "start_time": "14:00",
        "minutes": "110",
        "first_date": "2027-03-01",
        "last_date": "2027-03-31",
        "skip": "",
        "nodes": "1",
    }
    data.update(overrides)
    return data


@pytest.fixture(autouse=True)
def new_york(settings):
    settings.TIME_ZONE = "America/New_York"


def page(response) -> str:
    return html.unescape(response.content.decode())


def test_the_dates_of_a_series_are_each_weekday_from_the_first_to_the_last_less_the_skipped():
    dates = lab_series_dates(
        weekday=1, first=date(2027, 3, 1), last=date(2027, 3, 30), skipped=frozenset({date(2027, 3, 16)})
    )
    assert dates == [date(2027, 3, 2), date(2027, 3, 9), date(2027, 3, 23), date(2027, 3, 30)]
    assert lab_series_dates(weekday=0, first=date(2027, 3, 2), last=date(2027, 3, 7), skipped=frozenset()) == []


def test_an_instructor_schedules_a_weekly_lab_at_the_same_local_time_each_week(client, instructor, course):
    client.force_login(instructor)
    response = client.post(labs_url(), series_form(skip="2027-03-16"))
    assert response.status_code == 302, page(response)
    series = LabSeries.objects.get()
    sessions = list(series.sessions.order_by("starts_at"))
    local = [s.starts_at.astimezone(NEW_YORK) for s in sessions]
    assert [moment.date() for moment in local] == [date(2027, 3, d) for d in (2, 9, 23, 30)]
    assert {moment.time() for moment in local} == {time(14, 0)}
    assert [s.starts_at.astimezone(UTC).hour for s in sessions] == [19, 19, 18, 18], "summer time from 14 March"
    assert all(s.ends_at - s.starts_at == timedelta(minutes=110) for s in sessions)
    assert all((s.course, s.state, s.nodes) == (course, State.SCHEDULED, 1) for s in sessions)
    text = page(client.get(labs_url()))
    assert "Cancel this and the rest of the weekly series" in text


def test_a_series_with_one_colliding_week_is_refused_whole_naming_that_date(client, instructor, course, other_course):
    # Another course holds both reservable nodes on the third Tuesday.
    starts = datetime(2027, 3, 16, 13, 30, tzinfo=NEW_YORK)
    LabSession.objects.create(course=other_course, starts_at=starts, ends_at=starts + timedelta(hours=1), nodes=2)
    client.force_login(instructor)
    response = client.post(labs_url(), series_form())
    assert response.status_code == 400
    text = page(response)
    assert "No lab of the series was scheduled: 1 problem(s)." in text
    assert "Tue 2027-03-16: " in text and "other labs (CS102) already reserve 2 of the 2 reservable nodes" in text
    assert not LabSeries.objects.exists() and LabSession.objects.filter(course=course).count() == 0
    assert client.post(labs_url(), series_form(skip="2027-03-16")).status_code == 302, "skipping it fits"
    assert LabSession.objects.filter(course=course).count() == 4


def test_a_series_beyond_the_operators_limits_is_refused_with_each_date(client, instructor, course, settings):
    settings.LABQUEUE_LAB_MAX_MINUTES = 60
    client.force_login(instructor)
    response = client.post(labs_url(), series_form(last_date="2027-03-10"))
    assert response.status_code == 400
    text = page(response)
    assert text.count("A lab may last at most 60 minutes") == 2
    assert not LabSession.objects.exists()


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"last_date": "2027-02-01"}, "The last date must come on or after the first."),
        ({"skip": "16 March"}, "“16” is not a date: write dates as YYYY-MM-DD"),
        ({"first_date": "2027-03-03", "last_date": "2027-03-08"}, "No date between the first and the last"),
        ({"first_date": "2026-11-03", "last_date": "2026-11-10"}, "This time has passed."),
    ],
)
def test_a_series_that_cannot_be_made_says_why(client, instructor, course, overrides, message):
    client.force_login(instructor)
    response = client.post(labs_url(), series_form(**overrides))
    assert response.status_code == 400
    assert message in page(response)
    assert not LabSession.objects.exists()


def test_cancelling_the_rest_of_a_series_keeps_the_earlier_weeks(client, instructor, course):
    client.force_login(instructor)
    assert client.post(labs_url(), series_form()).status_code == 302
    sessions = list(LabSession.objects.order_by("starts_at"))
    response = client.post(reverse("courses:lab-series-cancel-rest", args=["cs101", sessions[2].uuid]))
    assert response.status_code == 302
    states = list(LabSession.objects.order_by("starts_at").values_list("state", flat=True))
    assert states == [State.SCHEDULED, State.SCHEDULED, State.CANCELLED, State.CANCELLED, State.CANCELLED]
    again = client.post(reverse("courses:lab-series-cancel-rest", args=["cs101", sessions[2].uuid]), follow=True)
    assert "These labs have already ended or been cancelled." in page(again)


def test_only_the_courses_instructors_schedule_or_cancel_a_series(client, ta, student, outsider, instructor, course):
    client.force_login(instructor)
    assert client.post(labs_url(), series_form()).status_code == 302
    session = LabSession.objects.first()
    cancel = reverse("courses:lab-series-cancel-rest", args=["cs101", session.uuid])
    for person, status in ((ta, 403), (student, 403), (outsider, 404)):
        client.force_login(person)
        assert (
            client.post(labs_url(), series_form(first_date="2027-04-01", last_date="2027-04-30")).status_code == status
        )
        assert client.post(cancel).status_code == status
    assert client.get(cancel).status_code == 405
    assert LabSession.objects.count() == 5 and not LabSession.objects.filter(state=State.CANCELLED).exists()


@pytest.mark.slurm
def test_the_first_week_of_a_series_starting_soon_is_reserved_in_slurm_at_its_time(
    client, instructor, course, settings
):
    settings.TIME_ZONE = "UTC"
    start = (timezone.now() + timedelta(minutes=30)).astimezone(UTC).replace(second=0, microsecond=0)
    client.force_login(instructor)
    form = series_form(
        weekday=str(start.weekday()),
        start_time=start.strftime("%H:%M"),
        minutes="30",
        first_date=start.date().isoformat(),
        last_date=(start.date() + timedelta(days=14)).isoformat(),
    )
    assert client.post(labs_url(), form).status_code == 302
    first, *later = LabSession.objects.order_by("starts_at")
    assert len(later) == 2
    try:
        labs_tick()
        first.refresh_from_db()
        assert first.state == State.RESERVED
        text = reservation_text(first.reservation_name)
        assert f"StartTime={start:%Y-%m-%dT%H:%M:%S} EndTime={start + timedelta(minutes=30):%Y-%m-%dT%H:%M:%S}" in text
        assert all(s.state == State.SCHEDULED for s in LabSession.objects.filter(pk__in=[s.pk for s in later]))
    finally:
        for session in LabSession.objects.all():
            name = session.reservation_name or reservation_name(session)
            slurm("scontrol", "delete", f"reservationname={name}", check=False)
            wait_until(lambda name=name: f"ReservationName={name} " not in reservation_text(name), timeout=30)
