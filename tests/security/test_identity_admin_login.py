"""/admin/login/ takes no password while local passwords are off: it sends people to campus sign-in and
back (tests/security/test_identity_sso.py follows that through a real IdP), and no password form of the
portal signs anyone in, even an operator account that still has a password from before."""

from django.contrib.auth import authenticate, get_user_model

User = get_user_model()
PASSWORD = "an-operators-old-pass-9"


def operator() -> User:
    return User.objects.create_user(username="ops", password=PASSWORD, is_staff=True, is_superuser=True)


def test_the_admin_login_sends_people_to_campus_sign_in_with_where_they_were_going(client, db):
    response = client.get("/admin/login/?next=/admin/portal/user/")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/admin/portal/user/"
    assert client.get("/admin/login/")["Location"] == "/accounts/login/?next=/admin/"


def test_a_password_posted_to_the_admin_login_signs_nobody_in(client, db):
    operator()

    response = client.post("/admin/login/?next=/admin/", {"username": "ops", "password": PASSWORD})

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.get("/admin/")["Location"].startswith("/admin/login/")


def test_no_backend_accepts_a_right_password(db):
    operator()

    assert authenticate(None, username="ops", password=PASSWORD) is None


def test_someone_signed_in_without_admin_rights_is_told_so(client, student):
    client.force_login(student)

    response = client.get("/admin/login/?next=/admin/")

    assert response.status_code == 403
    assert "You are signed in as student1, who has no access to the administration site" in response.content.decode()


def test_staff_already_signed_in_go_on_to_the_admin(client, db):
    client.force_login(operator())

    response = client.get("/admin/login/")

    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_with_local_passwords_on_the_admin_keeps_its_own_password_form(client, db, local_passwords_on):
    operator()

    assert b'name="password"' in client.get("/admin/login/").content
    response = client.post("/admin/login/?next=/admin/", {"username": "ops", "password": PASSWORD})

    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
