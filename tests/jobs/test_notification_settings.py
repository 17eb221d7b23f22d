"""The notifications page: each signed-in person chooses their own job mails, and only their own."""

from django.test import Client
from django.urls import reverse

from jobs.models import NotificationPreference
from tests.http_helpers import form_fields, page_messages

URL = reverse("jobs:notification-settings")


def ticked(page: str) -> set[str]:
    """The boxes ticked on the page's form (every field of it but its CSRF token)."""
    return set(form_fields(page, containing="notify_failed")) - {"csrfmiddlewaretoken"}


def test_the_page_is_in_the_header_and_shows_the_defaults_failures_and_refusals_on(client, student):
    client.force_login(student)
    home = client.get(reverse("jobs:job-list")).content.decode()
    assert f'href="{URL}"' in home

    page = client.get(URL).content.decode()
    assert ticked(page) == {"notify_failed", "notify_refused"}
    assert "daily_digest" not in page, "a student has no course to get a digest of"
    assert "no e-mail address" in page


def test_a_student_saves_their_choices_and_is_told_so(client, student):
    student.email = "student1@cs.example.edu"
    student.save(update_fields=["email"])
    client.force_login(student)

    response = client.post(URL, {"notify_finished": "on", "notify_refused": "on"}, follow=True)

    assert response.redirect_chain == [(URL, 302)]
    assert page_messages(response) == ["Your notification choices are saved. They apply to jobs that end from now on."]
    preference = NotificationPreference.objects.get(user=student)
    assert (preference.notify_finished, preference.notify_failed, preference.notify_refused) == (True, False, True)
    assert ticked(response.content.decode()) == {"notify_finished", "notify_refused"}
    assert "student1@cs.example.edu" in response.content.decode()


def test_the_page_changes_only_the_signed_in_persons_own_choices(client, student, classmate):
    NotificationPreference.objects.create(user=classmate, notify_failed=True, notify_finished=False)
    client.force_login(student)

    response = client.post(URL, {"user": classmate.pk, "notify_finished": "on", "daily_digest": "on"})

    assert response.status_code == 302
    theirs = NotificationPreference.objects.get(user=classmate)
    assert (theirs.notify_finished, theirs.notify_failed) == (False, True)
    mine = NotificationPreference.objects.get(user=student)
    assert mine.notify_finished and not mine.daily_digest, "a student cannot ask for the TAs' digest"
    assert NotificationPreference.objects.count() == 2


def test_a_ta_may_ask_for_the_daily_digest(client, ta):
    client.force_login(ta)
    assert "daily_digest" in client.get(URL).content.decode()

    assert client.post(URL, {"notify_failed": "on", "daily_digest": "on"}).status_code == 302

    assert NotificationPreference.objects.get(user=ta).daily_digest


def test_someone_signed_out_is_sent_to_sign_in_and_nothing_is_saved(client, db):
    for response in (client.get(URL), client.post(URL, {"notify_finished": "on"})):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("account_login"))
    assert not NotificationPreference.objects.exists()


def test_a_post_without_the_csrf_token_is_refused(student):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(student)

    assert browser.post(URL, {"notify_finished": "on"}).status_code == 403
    assert not NotificationPreference.objects.exists()


def test_other_methods_are_not_allowed(client, student):
    client.force_login(student)
    assert client.put(URL).status_code == 405
    assert client.delete(URL).status_code == 405
