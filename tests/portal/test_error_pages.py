"""Error pages look like the site, say what happened and what to do, and name who to contact."""

import pytest
from django.test import Client
from django.urls import reverse

import portal

CONTACT = "the CS help desk at help@cs.example.edu"


@pytest.fixture(autouse=True)
def support_contact(settings):
    settings.LABQUEUE_SUPPORT_CONTACT = CONTACT


def assert_site_page(response, status: int, heading: str) -> str:
    page = response.content.decode()
    assert response.status_code == status
    assert f"<h1>{heading}</h1>" in page
    assert f"contact {CONTACT}." in page
    assert f"LabQueue {portal.__version__}" in page  # the site's footer
    assert "labqueue.css" in page  # the site's own look
    return page


def test_an_unknown_address_gets_the_sites_404_page(client, db):
    assert_site_page(client.get("/no-such-page/"), 404, "Page not found")


def test_a_page_someone_may_not_see_gets_the_sites_403_page(client, student):
    client.force_login(student)

    page = assert_site_page(client.get(reverse("jobs:course-failures", args=["cs101"])), 403, "Not allowed")

    assert "Log out" in page  # the signed-in header, as on every page


def test_a_request_for_a_host_the_portal_does_not_serve_gets_the_sites_400_page(client, db):
    assert_site_page(client.get("/", headers={"host": "not-this-portal.example.com"}), 400, "Request not understood")


def test_a_fault_on_the_servers_side_gets_the_sites_500_page_without_a_request_context(db, settings):
    settings.ROOT_URLCONF = "tests.portal.failing_urls"
    client = Client(raise_request_exception=False)

    page = assert_site_page(client.get("/broken/"), 500, "Something went wrong")

    assert "Nothing you did caused it" in page
    assert "a fault on the server" not in page  # no internals shown
