"""Slurm associations through sacctmgr: read them, add, modify and delete them.

Every command goes through :func:`runner.run`. sacctmgr answers "Nothing new added." /
"Nothing modified" / "Nothing deleted" with exit status 1 when the change is already in
place: :func:`sacctmgr_apply` treats those as success, so applying a plan twice is harmless.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import runner
from .errors import SlurmRejected

#: `sacctmgr show assoc format=` fields, in this order (-P: "|" between them; no Slurm name holds "|").
ASSOC_FIELDS = (
    "account",
    "user",
    "partition",
    "grptres",
    "grptresmins",
    "maxjobs",
    "maxsubmit",
    "maxtres",
    "maxwall",
    "qos",
)
ASSOC_FORMAT = ",".join(ASSOC_FIELDS)
#: The organization of the accounts LabQueue makes: an existing account of another is not the portal's to manage.
ORGANIZATION = "labqueue"
#: What sacctmgr says when a change is already so. Slurm 22.05: "Nothing new added." (every association of an add
#: exists) and "Nothing modified"; Slurm 24.11 says "Request didn't affect anything" for both (with "Nothing added."
#: after an add). An add it skips for a missing account or cluster says neither: a refusal.
ALREADY_DONE = ("nothing new added", "nothing modified", "nothing deleted", "request didn't affect anything")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*$")
_WALL = re.compile(r"^(?:(?P<days>\d+)-)?(?:(?P<hours>\d+):)?(?P<minutes>\d+):(?P<seconds>\d+)$")
_MEM = re.compile(r"^(?P<number>\d+(?:\.\d+)?)(?P<unit>[KMGTP]?)$")


class ParseError(ValueError):
    pass


@dataclass(frozen=True)
class Assoc:
    """One association as sacctmgr shows it. `user` is "" for the account's own association.

    TRES values are ints (memory in MB); None means "no limit".
    """

    account: str
    user: str
    partition: str = ""
    grp_tres: dict[str, int] = field(default_factory=dict, hash=False)
    grp_tres_mins: dict[str, int] = field(default_factory=dict, hash=False)
    max_jobs: int | None = None
    max_submit: int | None = None
    max_tres: dict[str, int] = field(default_factory=dict, hash=False)
    max_wall_minutes: int | None = None
    qos: tuple[str, ...] = ()


def parse_tres(text: str) -> dict[str, int]:
    """`cpu=4,gres/gpu=1,mem=4000M` -> {"cpu": 4, "gres/gpu": 1, "mem": 4000} (memory in MB)."""
    result = {}
    for item in filter(None, text.strip().split(",")):
        name, sep, value = item.partition("=")
        if not sep:
            raise ParseError(f"not a TRES item: {item!r}")
        result[name] = _mem_mb(value) if name == "mem" else int(value)
    return result


def _mem_mb(value: str) -> int:
    match = _MEM.match(value)
    if not match:
        raise ParseError(f"not a memory size: {value!r}")
    factor = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}[match["unit"]]
    return round(float(match["number"]) * factor)


def parse_wall(text: str) -> int | None:
    """`00:30:00` -> 30, `1-01:00:00` -> 1500 (minutes); "" -> None."""
    text = text.strip()
    if not text or text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    match = _WALL.match(text)
    if not match:
        raise ParseError(f"not a wall time: {text!r}")
    days, hours = int(match["days"] or 0), int(match["hours"] or 0)
    return days * 1440 + hours * 60 + int(match["minutes"]) + (1 if int(match["seconds"]) else 0)


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def parse_assocs(stdout: str) -> list[Assoc]:
    """Lines of `sacctmgr -n -P show assoc format=ASSOC_FORMAT`."""
    result = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != len(ASSOC_FIELDS):
            raise ParseError(f"expected {len(ASSOC_FIELDS)} fields, got {len(parts)}: {line!r}")
        row = dict(zip(ASSOC_FIELDS, parts, strict=True))
        result.append(
            Assoc(
                account=row["account"],
                user=row["user"],
                partition=row["partition"],
                grp_tres=parse_tres(row["grptres"]),
                grp_tres_mins=parse_tres(row["grptresmins"]),
                max_jobs=_int(row["maxjobs"]),
                max_submit=_int(row["maxsubmit"]),
                max_tres=parse_tres(row["maxtres"]),
                max_wall_minutes=parse_wall(row["maxwall"]),
                qos=tuple(sorted(filter(None, row["qos"].split(",")))),
            )
        )
    return result


def check_name(name: str) -> str:
    if not _NAME.match(name or ""):
        raise ValueError(f"not a valid Slurm account or user name: {name!r}")
    return name


def assoc_list(*, cluster: str, accounts: Sequence[str]) -> list[Assoc]:
    """Every association (account's own and users') of these accounts: ONE sacctmgr show."""
    if not accounts:
        return []
    names = ",".join(check_name(account) for account in accounts)
    argv = [
        "sacctmgr",
        "-n",
        "-P",
        "show",
        "assoc",
        f"cluster={check_name(cluster)}",
        f"account={names}",
        f"format={ASSOC_FORMAT}",
    ]
    return parse_assocs(runner.run(argv))


def accounts_made_elsewhere(names: Sequence[str]) -> dict[str, str]:
    """Those of the accounts `names` that exist but were not made by LabQueue: account -> its organization (ONE
    sacctmgr show; an account that does not exist is not listed)."""
    if not names:
        return {}
    argv = ["sacctmgr", "-n", "-P", "show", "account", ",".join(check_name(name) for name in names)]
    rows = [line.split("|") for line in runner.run([*argv, "format=account,organization"]).splitlines() if line]
    return {row[0]: row[1] for row in rows if len(row) > 1 and row[1] != ORGANIZATION}


def account_add_argv(*, cluster: str, account: str, description: str) -> list[str]:
    return [
        "sacctmgr",
        "-i",
        "add",
        "account",
        check_name(account),
        f"cluster={check_name(cluster)}",
        f"description={description}",
        f"organization={ORGANIZATION}",
    ]


def user_add_argv(*, cluster: str, account: str, users: Sequence[str]) -> list[str]:
    names = ",".join(check_name(user) for user in users)
    return ["sacctmgr", "-i", "add", "user", names, f"account={check_name(account)}", f"cluster={check_name(cluster)}"]


def user_modify_argv(*, cluster: str, account: str, users: Sequence[str], values: dict[str, str]) -> list[str]:
    """One `sacctmgr modify user` for every user in `users` (their associations in `account` get the same values)."""
    names = ",".join(check_name(user) for user in users)
    where = ["where", f"name={names}", f"account={check_name(account)}", f"cluster={check_name(cluster)}"]
    return ["sacctmgr", "-i", "modify", "user", *where, "set", *(f"{key}={value}" for key, value in values.items())]


def account_modify_argv(*, cluster: str, account: str, values: dict[str, str]) -> list[str]:
    where = ["where", f"name={check_name(account)}", f"cluster={check_name(cluster)}"]
    return ["sacctmgr", "-i", "modify", "account", *where, "set", *(f"{key}={value}" for key, value in values.items())]


def user_delete_argv(*, cluster: str, account: str, user: str) -> list[str]:
    where = ["where", f"name={check_name(user)}", f"account={check_name(account)}", f"cluster={check_name(cluster)}"]
    return ["sacctmgr", "-i", "delete", "user", *where]


def sacctmgr_apply(argv: list[str]) -> str:
    """Run one sacctmgr change. "Nothing new added/modified/deleted" means it is already so: success."""
    if not argv or argv[0] != "sacctmgr" or "-i" not in argv:
        raise ValueError(f"not a sacctmgr change: {argv!r}")
    try:
        return runner.run(argv)
    except SlurmRejected as error:
        if any(marker in error.message.lower() for marker in ALREADY_DONE):
            return error.message
        raise
