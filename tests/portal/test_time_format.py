"""How durations read (pure: no database)."""

import pytest

from portal.templatetags.portal_time import duration, duration_text, when


@pytest.mark.parametrize(
    "seconds, text",
    [(0, "0 s"), (45, "45 s"), (60, "1 min 0 s"), (754, "12 min 34 s"), (3600, "1 h 00 min"), (11100, "3 h 05 min")],
)
def test_a_duration_reads_in_hours_minutes_and_seconds(seconds, text):
    assert duration_text(seconds) == text


def test_a_missing_time_or_duration_reads_as_a_dash():
    assert when(None) == "–"
    assert duration(None) == "–"


def test_a_duration_is_a_time_element_with_an_iso_duration():
    assert duration(11100) == '<time datetime="PT11100S">3 h 05 min</time>'
