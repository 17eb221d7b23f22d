"""The browser tests' own set-up works: a persona's context is signed in, the site's styles load, axe runs."""

from tests.browser.conftest import axe_violations


def test_a_students_browser_is_signed_in_and_gets_the_sites_styles(page_for, student):
    page = page_for(student)

    page.goto("/jobs/")

    assert page.title() == "My jobs · LabQueue"
    assert "Log out" in page.inner_text("header")
    # labqueue.css was served and applied: the header is a flex row.
    assert page.eval_on_selector("header.top", "e => getComputedStyle(e).display") == "flex"


def test_axe_reports_an_unlabelled_control(page_for, student):
    page = page_for(student)
    page.goto("/jobs/")

    page.evaluate("document.querySelector('main').append(document.createElement('select'))")

    assert any(line.startswith("select-name (critical)") for line in axe_violations(page))
