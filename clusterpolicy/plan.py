"""The association plan: desired limits (portal) vs actual associations (`sacctmgr show assoc`) -> changes.

Pure: no database, no Slurm command. :mod:`clusterpolicy.associations` builds the desired state from the
courses, reads Slurm once and applies what :func:`plan` returns.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections import defaultdict

from slurm import accounts
from slurm.accounts import Assoc


@dataclasses.dataclass(frozen=True)
class UserLimits:
    max_jobs: int | None
    max_submit: int | None
    max_tres: dict[str, int]
    max_wall_minutes: int | None
    gpu_minutes: int | None
    qos: str = ""
    lab_qos: str = ""  # the QOS of lab jobs (LABQUEUE_LAB_QOS), granted beside the course's


@dataclasses.dataclass(frozen=True)
class DesiredAccount:
    account: str
    description: str
    course_gpus: int | None
    users: dict[str, UserLimits]


@dataclasses.dataclass(frozen=True)
class Change:
    account: str
    user: str  # "" for the account's own association
    action: str  # add-account, add-user, modify, delete-user
    differences: list[str]
    argv: list[str]

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def as_json(self) -> dict:
        return {**dataclasses.asdict(self), "command": self.command}


def _limit(value: int | None) -> str:
    return "-1" if value is None else str(value)


def _tres_text(wanted: dict[str, int], actual: dict[str, int]) -> str:
    """The `set` value that makes `actual` equal `wanted`: changed keys, and -1 to clear extra ones."""
    items = []
    for key in sorted(set(wanted) | set(actual)):
        if wanted.get(key) != actual.get(key):
            value = wanted.get(key)
            items.append(f"{key}=-1" if value is None else f"{key}={value}M" if key == "mem" else f"{key}={value}")
    return ",".join(items)


def _show(value) -> str:
    if value is None or value == {}:
        return "none"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items()))
    return str(value)


def _user_sets(limits: UserLimits, actual: Assoc) -> tuple[dict[str, str], list[str]]:
    sets, differences = {}, []

    def differ(label: str, key: str, wanted, have, text: str) -> None:
        if wanted != have:
            sets[key] = text
            differences.append(f"{label}: {_show(have)} -> {_show(wanted)}")

    differ("MaxJobs", "MaxJobs", limits.max_jobs, actual.max_jobs, _limit(limits.max_jobs))
    differ("MaxSubmitJobs", "MaxSubmitJobs", limits.max_submit, actual.max_submit, _limit(limits.max_submit))
    differ("MaxTRESPerJob", "MaxTRES", limits.max_tres, actual.max_tres, _tres_text(limits.max_tres, actual.max_tres))
    differ("MaxWall", "MaxWall", limits.max_wall_minutes, actual.max_wall_minutes, _limit(limits.max_wall_minutes))
    wanted_mins = {"gres/gpu": limits.gpu_minutes} if limits.gpu_minutes is not None else {}
    differ(
        "GrpTRESMins", "GrpTRESMins", wanted_mins, actual.grp_tres_mins, _tres_text(wanted_mins, actual.grp_tres_mins)
    )
    missing_qos = [name for name in dict.fromkeys((limits.qos, limits.lab_qos)) if name and name not in actual.qos]
    if missing_qos:
        sets["QOS+"] = ",".join(missing_qos)
        differences.append(f"QOS: {','.join(actual.qos) or 'none'} -> also {sets['QOS+']}")
    return sets, differences


def plan(
    *, cluster: str, desired: list[DesiredAccount], actual: list[Assoc], known_users: set[str]
) -> tuple[list[Change], list[dict]]:
    """The changes that make Slurm match `desired`, and the unmanaged associations (pure).

    `actual` holds the associations of the desired accounts only; `known_users` are the cluster usernames
    the portal knows (only they are ever removed from a course account).
    """
    changes: list[Change] = []
    unmanaged: list[dict] = []
    by_account: dict[str, dict[str, Assoc]] = defaultdict(dict)
    for assoc in actual:
        if assoc.partition:
            unmanaged.append({"account": assoc.account, "user": assoc.user, "why": f"partition {assoc.partition}"})
            continue
        by_account[assoc.account][assoc.user] = assoc
    for want in desired:
        have = by_account.get(want.account, {})
        changes += _account_changes(cluster, want, have.get(""))
        changes += _user_changes(cluster, want, have)
        for user in sorted(set(have) - set(want.users) - {""}):
            if user in known_users:
                changes.append(
                    Change(
                        want.account,
                        user,
                        "delete-user",
                        [f"{user} is not enrolled"],
                        accounts.user_delete_argv(cluster=cluster, account=want.account, user=user),
                    )
                )
            else:
                unmanaged.append({"account": want.account, "user": user, "why": "not a portal user"})
    return changes, unmanaged


def _account_changes(cluster: str, want: DesiredAccount, own: Assoc | None) -> list[Change]:
    """The course account itself: made when missing, its course-wide GPUs (GrpTRES) set when they differ."""
    changes = []
    if own is None:
        changes.append(
            Change(
                want.account,
                "",
                "add-account",
                ["account missing"],
                accounts.account_add_argv(cluster=cluster, account=want.account, description=want.description),
            )
        )
        own = Assoc(account=want.account, user="")
    wanted_grp = {"gres/gpu": want.course_gpus} if want.course_gpus is not None else {}
    have_grp = dict(own.grp_tres)
    if wanted_grp != have_grp:
        text = _tres_text(wanted_grp, have_grp)
        changes.append(
            Change(
                want.account,
                "",
                "modify",
                [f"GrpTRES: {_show(have_grp)} -> {_show(wanted_grp)}"],
                accounts.account_modify_argv(cluster=cluster, account=want.account, values={"GrpTRES": text}),
            )
        )
    return changes


def _user_changes(cluster: str, want: DesiredAccount, have: dict[str, Assoc]) -> list[Change]:
    """The students' associations: added when missing, their limits set when they differ."""
    changes = []
    missing = [user for user in want.users if user not in have]
    if missing:
        changes.append(
            Change(
                want.account,
                ",".join(missing),
                "add-user",
                [f"association missing for {u}" for u in missing],
                accounts.user_add_argv(cluster=cluster, account=want.account, users=missing),
            )
        )
    # Users who need the same `set` values (a policy change: usually the whole class) share one command.
    groups: dict[tuple, tuple[dict[str, str], list[str], list[str]]] = {}
    for user, limits in want.users.items():
        sets, differences = _user_sets(limits, have.get(user) or Assoc(account=want.account, user=user))
        if sets:
            _, users, seen = groups.setdefault(tuple(sorted(sets.items())), (sets, [], []))
            users.append(user)
            seen.extend(difference for difference in differences if difference not in seen)
    for sets, users, differences in groups.values():
        values = {name.rstrip("+"): value for name, value in sets.items() if not name.endswith("+")}
        argv = accounts.user_modify_argv(cluster=cluster, account=want.account, users=users, values=values)
        argv += [f"QOS+={sets['QOS+']}"] if "QOS+" in sets else []
        changes.append(Change(want.account, ",".join(users), "modify", differences, argv))
    return changes
