"""The reconciliation plan (pure) for the course QOS and for associations tied to a partition."""

from dataclasses import replace

from clusterpolicy.plan import DesiredAccount, UserLimits, plan
from slurm.accounts import Assoc

LIMITS = UserLimits(max_jobs=2, max_submit=4, max_tres={"gres/gpu": 1}, max_wall_minutes=30, gpu_minutes=None)
MATCHING = dict(max_jobs=2, max_submit=4, max_tres={"gres/gpu": 1}, max_wall_minutes=30, qos=("normal",))
ACCOUNT = Assoc("cs102", "", grp_tres={"gres/gpu": 4})


def desired(limits: UserLimits = LIMITS) -> list[DesiredAccount]:
    return [DesiredAccount("cs102", "CS102 Fall", 4, {"student1": limits})]


def test_a_missing_course_qos_is_added_to_the_users_qos_list_not_set_in_place_of_it():
    limits = replace(LIMITS, qos="coursework")

    changes, _ = plan(
        cluster="lab",
        desired=desired(limits),
        actual=[ACCOUNT, Assoc("cs102", "student1", **MATCHING)],
        known_users=set(),
    )

    assert len(changes) == 1
    assert changes[0].differences == ["QOS: normal -> also coursework"]
    assert changes[0].argv[-2:] == ["set", "QOS+=coursework"], "QOS+= keeps the QOS the site gave"


def test_a_user_without_any_qos_gets_the_course_qos_with_the_other_limits():
    limits = replace(LIMITS, qos="coursework")
    actual = [ACCOUNT, Assoc("cs102", "student1", **{**MATCHING, "max_jobs": 9, "qos": ()})]

    (change,) = plan(cluster="lab", desired=desired(limits), actual=actual, known_users=set())[0]

    assert change.differences == ["MaxJobs: 9 -> 2", "QOS: none -> also coursework"]
    assert change.argv[-3:] == ["set", "MaxJobs=2", "QOS+=coursework"]


def test_a_course_qos_already_in_the_list_is_no_change():
    limits = replace(LIMITS, qos="coursework")
    actual = [ACCOUNT, Assoc("cs102", "student1", **{**MATCHING, "qos": ("coursework", "normal")})]

    assert plan(cluster="lab", desired=desired(limits), actual=actual, known_users=set()) == ([], [])


def test_associations_tied_to_a_partition_are_left_alone_and_listed():
    actual = [
        ACCOUNT,
        Assoc("cs102", "student1", **MATCHING),
        Assoc("cs102", "student1", partition="debug", max_jobs=1),
        Assoc("cs102", "student2", partition="debug"),
    ]

    changes, unmanaged = plan(cluster="lab", desired=desired(), actual=actual, known_users={"student1", "student2"})

    assert changes == [], "the partition association neither stands in for the plain one nor gets deleted"
    assert unmanaged == [
        {"account": "cs102", "user": "student1", "why": "partition debug"},
        {"account": "cs102", "user": "student2", "why": "partition debug"},
    ]


def test_a_recorded_change_holds_a_command_that_can_be_pasted_into_a_shell():
    changes, _ = plan(cluster="lab", desired=desired(), actual=[], known_users=set())

    recorded = changes[0].as_json()

    assert recorded["action"] == "add-account"
    assert recorded["argv"] == changes[0].argv
    assert recorded["command"] == (
        "sacctmgr -i add account cs102 cluster=lab 'description=CS102 Fall' organization=labqueue"
    )
    assert recorded["differences"] == ["account missing"]
