"""The stable pseudonym that replaces the cluster username of a person the portal forgot (ops.forget).

`former-` and 16 hex digits of an HMAC of the netid keyed with the site's secret key: the same netid always
gives the same pseudonym (so a usage ingest can file a forgotten person's late accounting records under it),
and without the key nobody can turn a pseudonym back into a netid by trying every netid.
"""

from django.contrib.auth import get_user_model
from django.utils.crypto import salted_hmac

PREFIX = "former-"


def pseudonym(netid: str) -> str:
    """A valid cluster username (portal.models.POSIX_NAME), never a real one."""
    return PREFIX + salted_hmac("labqueue.reports.pseudonyms", netid).hexdigest()[:16]


def forgotten_netids(netids: set[str]) -> dict[str, str]:
    """For those of `netids` who were forgotten, their pseudonym: one query, a second only when some were.
    A netid that a person in the portal holds again (campus gave it to someone new) is that person's."""
    names = {pseudonym(netid): netid for netid in netids if netid and not netid.startswith(PREFIX)}
    if not names:
        return {}
    people = get_user_model().objects
    found = {names[name]: name for name in people.filter(netid__in=list(names)).values_list("netid", flat=True)}
    if found:
        for netid in people.filter(netid__in=list(found)).values_list("netid", flat=True):
            del found[netid]
    return found
