"""SSO-only mode: a password sent to the login form signs nobody in, checked in the browser that sent it.

(The older check in test_sso_login.py asks for the home page without any session, which is refused
whatever the login did; here the same browser session that posted the password asks.)
"""

import requests
from django.contrib.auth import get_user_model

from .conftest import sso_login

User = get_user_model()


def password_login(live_server, browser: requests.Session, username: str, password: str) -> requests.Response:
    browser.get(f"{live_server.url}/accounts/login/", timeout=10)
    data = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "login": username, "password": password}
    return browser.post(f"{live_server.url}/accounts/login/", data=data, timeout=10)


def signed_in(live_server, browser: requests.Session) -> bool:
    home = browser.get(f"{live_server.url}/", timeout=10)
    assert home.status_code == 200
    return not home.url.startswith(f"{live_server.url}/accounts/login/")


def test_sso_only_mode_refuses_a_password_login_in_the_browser_that_tried_it(live_server, sso, settings):
    User.objects.create_user(username="student1", password="pw-student1", netid="student1")

    settings.SOCIALACCOUNT_ONLY = False
    control = requests.Session()
    password_login(live_server, control, "student1", "pw-student1")
    assert signed_in(live_server, control), "without SSO-only the same password signs in: the check below can see it"

    settings.SOCIALACCOUNT_ONLY = True
    browser = requests.Session()
    response = password_login(live_server, browser, "student1", "pw-student1")
    assert response.status_code == 403
    assert not signed_in(live_server, browser)
    assert browser.get(f"{live_server.url}/jobs/", timeout=10).url.startswith(f"{live_server.url}/accounts/login/")


def test_sso_only_mode_still_signs_in_through_the_campus_idp_in_the_same_browser(live_server, sso, settings):
    settings.SOCIALACCOUNT_ONLY = True
    browser = requests.Session()
    User.objects.create_user(username="local", password="pw-local")
    assert password_login(live_server, browser, "local", "pw-local").status_code == 403
    assert not signed_in(live_server, browser)
    home = sso_login(live_server.url, sso.oidc, "student4", browser)
    assert home.status_code == 200 and home.url == f"{live_server.url}/"
    assert signed_in(live_server, browser)
