"""Campus sign-in through real IdPs (OIDC and SAML) over HTTP: netids, roles, refusals, logout."""

import logging

import pytest
import requests
from django.contrib.auth import get_user_model
from django.urls import reverse

from courses.models import Enrollment, Role

from .conftest import forms, portal_providers, set_person, sso_login

User = get_user_model()


def test_the_login_page_shows_a_button_per_campus_idp(live_server, sso, settings):
    page = requests.get(f"{live_server.url}/accounts/login/", timeout=10).text
    assert "Example University (OIDC)" in page and "Example University (SAML)" in page
    assert 'name="password"' not in page, "local passwords are off unless the settings turn them on"

    settings.SOCIALACCOUNT_ONLY = False  # what LABQUEUE_LOCAL_PASSWORDS=1 or the demo gives
    page = requests.get(f"{live_server.url}/accounts/login/", timeout=10).text
    assert "Example University (OIDC)" in page and 'name="password"' in page, "local logins beside campus sign-in"


def test_a_first_login_creates_the_person_with_their_netid_and_course_role(live_server, idp, course):
    home = sso_login(live_server.url, idp, "student4")
    assert home.status_code == 200 and home.url == f"{live_server.url}/", home.text[:2000]
    assert "CS101" in home.text
    person = User.objects.get(netid="student4")
    assert person.username == "student4" and person.email == "student4@example.edu"
    assert (person.first_name, person.last_name) == ("Pat", "Four")
    assert not person.has_usable_password()
    assert Enrollment.objects.get(user=person, course=course).role == Role.STUDENT
    assert person.socialaccount_set.get().uid  # linked to the IdP account


def test_a_second_login_updates_roles_and_the_staff_flag(live_server, idp, sso, course):
    sso_login(live_server.url, idp, "student4")
    set_person(sso, "student4", groups=["urn:example.edu:cs101:tas"], affiliation=["staff"])
    home = sso_login(live_server.url, idp, "student4")
    assert home.status_code == 200
    person = User.objects.get(netid="student4")
    assert Enrollment.objects.get(user=person, course=course).role == Role.TA
    assert person.is_staff
    assert User.objects.filter(netid="student4").count() == 1


def test_a_non_campus_identity_is_refused_with_a_clear_page(live_server, idp, course):
    response = sso_login(live_server.url, idp, "visitor")
    assert response.status_code == 403
    assert "not from a campus this portal serves" in response.text
    assert not User.objects.filter(email="visitor@elsewhere.org").exists()


def test_a_campus_whose_netids_are_in_another_domain_signs_people_in_by_its_own_pattern(
    live_server, idp, sso, settings
):
    settings.SOCIALACCOUNT_PROVIDERS = portal_providers(
        sso.oidc.url, sso.saml.url, sso.saml_cert, scopes=("cs.example.edu",)
    )
    settings.LABQUEUE_NETID_PATTERN = r"^([^@]+)@cs\.example\.edu$"
    set_person(sso, "student4", eppn="student4@cs.example.edu")

    home = sso_login(live_server.url, idp, "student4")

    assert home.status_code == 200 and home.url == f"{live_server.url}/", home.text[:2000]
    assert User.objects.get(netid="student4").username == "student4"


def test_an_eppn_that_is_not_a_posix_name_is_refused(live_server, idp):
    response = sso_login(live_server.url, idp, "badname")
    assert response.status_code == 403 and "cannot be a cluster user name" in response.text
    assert User.objects.count() == 0


@pytest.mark.parametrize("request_url", ["", "https://help.example.edu/accounts/new"])
def test_a_person_without_a_cluster_account_is_told_to_get_one(live_server, idp, settings, caplog, request_url):
    settings.LABQUEUE_ACCOUNT_REQUEST_URL = request_url
    with caplog.at_level(logging.INFO, logger="portal.auth"):
        response = sso_login(live_server.url, idp, "nocluster")
    assert response.status_code == 403
    assert "You need a cluster account first" in response.text and "nocluster" in response.text
    if request_url:
        assert f'<a class="button" href="{request_url}">Request a cluster account</a>' in response.text
    else:
        assert "Ask the research computing help desk or your course staff to create the account" in response.text
    assert not User.objects.filter(netid="nocluster").exists()
    assert "SSO login of nocluster@example.edu: no cluster account nocluster" in [
        record.getMessage() for record in caplog.records if record.name == "portal.auth"
    ]


def test_a_taken_username_does_not_change_the_netid(live_server, idp, course):
    local = User.objects.create_user(username="student4", password="pw-local")  # someone else, no netid
    home = sso_login(live_server.url, idp, "student4")
    assert home.status_code == 200
    person = User.objects.get(netid="student4")
    assert person.pk != local.pk and person.username != "student4", "allauth picked another username..."
    local.refresh_from_db()
    assert local.netid is None, "...and the local account is untouched"


def test_a_roster_created_person_is_linked_by_netid_not_duplicated(live_server, idp, sso, course):
    rostered = User.objects.create(username="student4", netid="student4", first_name="Pat")
    rostered.set_unusable_password()
    rostered.save()
    course.enrollments.create(user=rostered, role=Role.STUDENT)
    set_person(sso, "student4", groups=[])
    home = sso_login(live_server.url, idp, "student4")
    assert "CS101" in home.text
    assert User.objects.filter(netid="student4").get().pk == rostered.pk
    assert rostered.socialaccount_set.count() == 1


def test_a_login_before_any_roster_shows_a_friendly_empty_home(live_server, idp, sso):
    set_person(sso, "student4", groups=[])
    home = sso_login(live_server.url, idp, "student4")
    assert home.status_code == 200 and "not enrolled in any course yet" in home.text


def test_an_operations_person_gets_the_staff_flag_from_the_affiliation(live_server, idp):
    sso_login(live_server.url, idp, "opsadmin")
    assert User.objects.get(netid="instructor1").is_staff


def test_sso_only_mode_has_no_password_login(live_server, sso, settings):
    settings.SOCIALACCOUNT_ONLY = True
    User.objects.create_user(username="student1", password="pw-student1", netid="student1")
    page = requests.get(f"{live_server.url}/accounts/login/", timeout=10).text
    assert "Example University (SAML)" in page and 'name="password"' not in page
    browser = requests.Session()
    browser.get(f"{live_server.url}/accounts/login/", timeout=10)
    token = browser.cookies["csrftoken"]
    response = browser.post(
        f"{live_server.url}/accounts/login/",
        data={"csrfmiddlewaretoken": token, "login": "student1", "password": "pw-student1"},
        timeout=10,
    )
    assert response.status_code == 403
    assert requests.get(f"{live_server.url}/", timeout=10).url.startswith(f"{live_server.url}/accounts/login/")


def test_saml_logout_also_ends_the_idp_session(live_server, sso):
    browser = requests.Session()
    home = sso_login(live_server.url, sso.saml, "student4", browser)
    assert home.url == f"{live_server.url}/"
    form = next(f for f in forms(home) if f["action"].endswith(reverse("account_logout")))
    response = browser.post(form["action"], data=form["data"], timeout=30)
    # portal logout -> IdP single logout (LogoutRequest) -> portal SLS (LogoutResponse) -> login page
    assert any(r.url.startswith(sso.saml.url + "/idp/slo/") for r in response.history), response.url
    assert response.status_code == 200 and response.url.startswith(f"{live_server.url}/accounts/login/")
    assert browser.get(f"{live_server.url}/", timeout=10).url.startswith(f"{live_server.url}/accounts/login/")
