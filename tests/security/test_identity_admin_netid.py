"""The admin's user form refuses a netid the portal must never become (portal.identity)."""

import pytest
from django.contrib.auth import get_user_model

User = get_user_model()


@pytest.fixture
def admin_client(client, db):
    client.force_login(User.objects.create(username="ops", is_staff=True, is_superuser=True))
    return client


def change_user(admin_client, user, netid: str):
    data = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": "",
        "email": "",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "09:00:00",
        "netid": netid,
    }
    return admin_client.post(f"/admin/portal/user/{user.pk}/change/", data)


@pytest.mark.parametrize(
    "netid, reason",
    [
        ("root", "“root” is a reserved account on the cluster"),
        ("nobody", "“nobody” is a reserved account on the cluster"),
        ("daemon", "“daemon” is a system account on the cluster (uid 1)"),
    ],
)
def test_the_admin_cannot_give_someone_a_refused_netid(admin_client, netid, reason):
    person = User.objects.create(username="pat", first_name="Pat", netid="student4")

    response = change_user(admin_client, person, netid)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"netid": [f"{reason}; the portal never runs anything as it."]}
    person.refresh_from_db()
    assert person.netid == "student4"


def test_the_admin_still_sets_an_ordinary_netid_or_none(admin_client):
    person = User.objects.create(username="pat", first_name="Pat")

    assert change_user(admin_client, person, "student4").status_code == 302
    person.refresh_from_db()
    assert person.netid == "student4"

    assert change_user(admin_client, person, "").status_code == 302
    person.refresh_from_db()
    assert person.netid is None
