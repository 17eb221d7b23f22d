"""portal.identity.netid_refusal: the one rule for the cluster accounts the portal must never become,
read against this machine's real user database (root uid 0, daemon uid 1, www-data uid 33, nobody
uid 65534, the lab cluster's student accounts from uid 1001). Pure: no database."""

import pytest

from portal.identity import netid_refusal


@pytest.mark.parametrize("netid", ["root", "ROOT", " root "])
def test_root_is_refused_in_any_case_or_padding(netid):
    assert "reserved account" in netid_refusal(netid)


def test_root_is_refused_even_with_an_empty_deny_list_and_no_uid_floor(settings):
    settings.LABQUEUE_DENIED_NETIDS = []
    settings.LABQUEUE_MIN_UID = 0

    assert "reserved account" in netid_refusal("root")


@pytest.mark.parametrize("netid, uid", [("daemon", 1), ("www-data", 33)])
def test_a_system_account_below_the_uid_floor_is_refused(netid, uid):
    assert netid_refusal(netid) == (
        f"“{netid}” is a system account on the cluster (uid {uid}); the portal never runs anything as it."
    )


def test_nobody_has_a_high_uid_and_is_refused_by_the_default_deny_list():
    assert "reserved account" in netid_refusal("nobody")


def test_a_student_account_is_allowed():
    assert netid_refusal("student1") is None


def test_a_name_without_an_account_is_not_a_system_account():
    assert netid_refusal("no-such-user-here") is None


def test_the_uid_floor_is_a_setting(settings):
    settings.LABQUEUE_MIN_UID = 1002  # student1 has uid 1001

    assert "system account on the cluster (uid 1001)" in netid_refusal("student1")
    assert netid_refusal("student2") is None


def test_the_deny_list_is_a_setting_matched_whatever_its_case(settings):
    settings.LABQUEUE_DENIED_NETIDS = ["Student1", "svc-backup"]

    assert "reserved account" in netid_refusal("student1")
    assert "reserved account" in netid_refusal("svc-backup"), "even a name with no account here"
    assert netid_refusal("nobody") is None, "the list replaces the default"


def test_a_name_no_user_database_can_hold_is_refused():
    assert netid_refusal("stu\x00dent1") == "“stu\x00dent1” cannot be a cluster user name."
