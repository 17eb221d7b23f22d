"""The staff flag follows the IdP on every login: taken away when the IdP stops granting it."""

import requests
from django.contrib.auth import get_user_model
from django.urls import reverse

from .conftest import set_person, sso_login

User = get_user_model()
STAFF_GROUP = "urn:example.edu:hpc-admins"


def overview_status(live_server, browser: requests.Session) -> int:
    """What the operations-staff-only usage overview answers this browser's session."""
    return browser.get(live_server.url + reverse("reports:usage-overview"), timeout=30).status_code


def test_the_staff_flag_is_removed_when_the_idp_no_longer_sends_the_staff_affiliation(live_server, idp, sso):
    first = requests.Session()
    assert sso_login(live_server.url, idp, "opsadmin", first).status_code == 200
    assert User.objects.get(netid="instructor1").is_staff
    assert overview_status(live_server, first) == 200

    set_person(sso, "opsadmin", affiliation=["member"])
    later = requests.Session()
    home = sso_login(live_server.url, idp, "opsadmin", later)
    assert home.status_code == 200 and home.url == f"{live_server.url}/"
    assert not User.objects.get(netid="instructor1").is_staff
    assert overview_status(live_server, later) == 403
    assert User.objects.filter(netid="instructor1").count() == 1


def test_the_staff_flag_is_removed_when_the_idp_no_longer_sends_the_staff_group(live_server, idp, sso, settings):
    settings.LABQUEUE_STAFF_GROUPS = [STAFF_GROUP]
    set_person(sso, "student4", groups=["urn:example.edu:cs101:students", STAFF_GROUP])
    first = requests.Session()
    assert sso_login(live_server.url, idp, "student4", first).status_code == 200
    assert User.objects.get(netid="student4").is_staff
    assert overview_status(live_server, first) == 200

    set_person(sso, "student4", groups=["urn:example.edu:cs101:students"])
    later = requests.Session()
    assert sso_login(live_server.url, idp, "student4", later).status_code == 200
    assert not User.objects.get(netid="student4").is_staff
    assert overview_status(live_server, later) == 403


def test_a_superuser_keeps_the_flag_the_idp_does_not_grant(live_server, idp, sso):
    """Superusers are made by hand in the admin; a login must not lock them out of it."""
    set_person(sso, "opsadmin", affiliation=["member"])
    assert sso_login(live_server.url, idp, "opsadmin").status_code == 200  # the first sign-in links the account
    User.objects.filter(netid="instructor1").update(is_staff=True, is_superuser=True)  # then an operator
    assert sso_login(live_server.url, idp, "opsadmin").status_code == 200
    admin = User.objects.get(netid="instructor1")
    assert admin.is_staff and admin.is_superuser
