"""The notifications page on a phone (390 px): the boxes, the save and its message fit the screen, and axe-core
finds no critical or serious accessibility violation."""

import pytest

from jobs.models import NotificationPreference
from tests.browser.conftest import PHONE, axe_violations

pytestmark = pytest.mark.timeout(300)


def test_a_ta_turns_failure_mail_off_and_the_digest_on_from_a_phone(page_for, ta):
    page = page_for(ta, viewport=PHONE)
    page.goto("/jobs/")
    page.get_by_role("link", name="Notifications").click()
    page.wait_for_url("**/jobs/notifications/")
    assert page.get_by_label("When one of my jobs fails").is_checked()

    page.get_by_label("When one of my jobs fails").uncheck()
    page.get_by_label("A daily digest of new failed jobs in the courses I teach or assist").check()
    page.get_by_role("button", name="Save choices").click()

    page.get_by_text("Your notification choices are saved.").wait_for()
    assert not page.get_by_label("When one of my jobs fails").is_checked()
    preference = NotificationPreference.objects.get(user=ta)
    assert (preference.notify_failed, preference.daily_digest) == (False, True)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert axe_violations(page) == []
