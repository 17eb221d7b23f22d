"""The reconciliation plan (pure), change by change: what each change names, says and runs."""

from clusterpolicy.plan import Change, DesiredAccount, UserLimits, plan
from slurm.accounts import Assoc

COURSE_LIMITS = UserLimits(
    max_jobs=1,
    max_submit=3,
    max_tres={"cpu": 2, "gres/gpu": 1, "mem": 8000},
    max_wall_minutes=60,
    gpu_minutes=120,
    qos="coursework",
)


def test_a_new_course_is_an_account_its_gpu_cap_its_students_and_one_command_for_their_limits():
    desired = [DesiredAccount("cs103", "CS103 Spring", 2, {"alice": COURSE_LIMITS, "bob": COURSE_LIMITS})]

    changes, unmanaged = plan(cluster="lab", desired=desired, actual=[], known_users=set())

    assert changes == [
        Change(
            "cs103",
            "",
            "add-account",
            ["account missing"],
            [
                "sacctmgr",
                "-i",
                "add",
                "account",
                "cs103",
                "cluster=lab",
                "description=CS103 Spring",
                "organization=labqueue",
            ],
        ),
        Change(
            "cs103",
            "",
            "modify",
            ["GrpTRES: none -> gres/gpu=2"],
            ["sacctmgr", "-i", "modify", "account", "where", "name=cs103", "cluster=lab", "set", "GrpTRES=gres/gpu=2"],
        ),
        Change(
            "cs103",
            "alice,bob",
            "add-user",
            ["association missing for alice", "association missing for bob"],
            ["sacctmgr", "-i", "add", "user", "alice,bob", "account=cs103", "cluster=lab"],
        ),
        Change(
            "cs103",
            "alice,bob",
            "modify",
            [
                "MaxJobs: none -> 1",
                "MaxSubmitJobs: none -> 3",
                "MaxTRESPerJob: none -> cpu=2,gres/gpu=1,mem=8000",
                "MaxWall: none -> 60",
                "GrpTRESMins: none -> gres/gpu=120",
                "QOS: none -> also coursework",
            ],
            [
                *("sacctmgr", "-i", "modify", "user", "where", "name=alice,bob", "account=cs103", "cluster=lab", "set"),
                *("MaxJobs=1", "MaxSubmitJobs=3", "MaxTRES=cpu=2,gres/gpu=1,mem=8000M", "MaxWall=60"),
                *("GrpTRESMins=gres/gpu=120", "QOS+=coursework"),
            ],
        ),
    ]
    assert unmanaged == []


def test_a_smaller_gpu_cap_a_dropped_job_limit_and_a_dropped_student_are_each_a_change_that_says_what_it_was():
    limits = UserLimits(
        max_jobs=None, max_submit=4, max_tres={"gres/gpu": 1}, max_wall_minutes=30, gpu_minutes=None, qos="coursework"
    )
    desired = [DesiredAccount("cs103", "CS103 Spring", 2, {"alice": limits})]
    actual = [
        Assoc("cs103", "", grp_tres={"gres/gpu": 4}),
        Assoc(
            "cs103",
            "alice",
            max_jobs=2,
            max_submit=4,
            max_tres={"gres/gpu": 1},
            max_wall_minutes=30,
            qos=("debug", "normal"),
        ),
        Assoc("cs103", "bob", max_jobs=2),
    ]

    changes, unmanaged = plan(cluster="lab", desired=desired, actual=actual, known_users={"alice", "bob"})

    assert changes == [
        Change(
            "cs103",
            "",
            "modify",
            ["GrpTRES: gres/gpu=4 -> gres/gpu=2"],
            ["sacctmgr", "-i", "modify", "account", "where", "name=cs103", "cluster=lab", "set", "GrpTRES=gres/gpu=2"],
        ),
        Change(
            "cs103",
            "alice",
            "modify",
            ["MaxJobs: 2 -> none", "QOS: debug,normal -> also coursework"],
            [
                *("sacctmgr", "-i", "modify", "user", "where", "name=alice", "account=cs103", "cluster=lab", "set"),
                *("MaxJobs=-1", "QOS+=coursework"),
            ],
        ),
        Change(
            "cs103",
            "bob",
            "delete-user",
            ["bob is not enrolled"],
            ["sacctmgr", "-i", "delete", "user", "where", "name=bob", "account=cs103", "cluster=lab"],
        ),
    ]
    assert unmanaged == []


def test_a_course_without_a_gpu_cap_whose_account_has_none_needs_no_change():
    limits = UserLimits(max_jobs=2, max_submit=4, max_tres={}, max_wall_minutes=30, gpu_minutes=None)
    desired = [DesiredAccount("cs103", "CS103 Spring", None, {"alice": limits})]
    actual = [Assoc("cs103", ""), Assoc("cs103", "alice", max_jobs=2, max_submit=4, max_wall_minutes=30)]

    assert plan(cluster="lab", desired=desired, actual=actual, known_users={"alice"}) == ([], [])
