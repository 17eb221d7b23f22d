"""Who the portal may become: the one rule for cluster user names (netids) nobody may run jobs as.

`netid_refusal` is asked wherever a netid enters the portal or is about to be used: a campus
sign-in (portal.auth), a roster import (courses.roster), the admin's user form (portal.admin), and
again by the worker just before it runs anything as the netid (jobs.dispatch). Refused are:

- ``root``, and any account whose uid is 0 whatever its name;
- system accounts: a uid below ``LABQUEUE_MIN_UID`` (1000 by default, as Open OnDemand's ``min_uid``);
- the names in ``LABQUEUE_DENIED_NETIDS`` (``root,nobody`` by default: ``nobody`` has uid 65534).

A netid that has no POSIX account here is not a system account: this rule lets it through, and the
account check (portal.sso.account_exists, and the worker) deals with accounts that do not exist.
"""

from __future__ import annotations

import pwd

from django.conf import settings


def netid_refusal(netid: str) -> str | None:
    """Why the portal must never act as `netid` (a message for people), or None when it may."""
    name = netid.strip().lower()
    denied = {item.strip().lower() for item in settings.LABQUEUE_DENIED_NETIDS}
    if name == "root" or name in denied:
        return f"“{netid}” is a reserved account on the cluster; the portal never runs anything as it."
    try:
        uid = pwd.getpwnam(netid).pw_uid
    except KeyError:  # no such account: not a system account (the account check handles it)
        return None
    except ValueError:  # e.g. an embedded NUL: no user database can hold this name
        return f"“{netid}” cannot be a cluster user name."
    if uid == 0 or uid < settings.LABQUEUE_MIN_UID:
        return f"“{netid}” is a system account on the cluster (uid {uid}); the portal never runs anything as it."
    return None
