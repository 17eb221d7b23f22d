"""`{% livepart "name" "tag" %}...{% endlivepart %}`: one separately swapped part of the job page's live part.

It renders as `<tag id="live-name" data-v="...">...</tag>`, data-v being a digest of its content (the
per-request CSRF token left out, so a form that did not change keeps its digest). In the poll's answer
(`oob` in the context) the part also carries hx-swap-oob, and static/labqueue.js swaps it in only when its
digest differs from the one on the page: a part that did not change is never replaced, so the button that
has focus keeps it.
"""

import hashlib
import re

from django import template
from django.utils.safestring import mark_safe

register = template.Library()

CSRF_INPUT = re.compile(r'<input type="hidden" name="csrfmiddlewaretoken" value="[^"]*">')
NAME = re.compile(r"[a-z][a-z0-9-]*")


class LivePartNode(template.Node):
    def __init__(self, nodelist: template.NodeList, name: str, tag: str) -> None:
        self.nodelist, self.name, self.tag = nodelist, name, tag

    def render(self, context: template.Context) -> str:
        content = self.nodelist.render(context)
        version = hashlib.blake2b(CSRF_INPUT.sub("", content).encode(), digest_size=8).hexdigest()
        oob = ' hx-swap-oob="true"' if context.get("oob") else ""
        return mark_safe(f'<{self.tag} id="live-{self.name}" data-v="{version}"{oob}>{content}</{self.tag}>')


@register.tag
def livepart(parser: template.base.Parser, token: template.base.Token) -> LivePartNode:
    bits = token.split_contents()
    if len(bits) not in (2, 3):
        raise template.TemplateSyntaxError('usage: {% livepart "name" ["tag"] %}...{% endlivepart %}')
    name, tag = (bit.strip("\"'") for bit in [*bits[1:], '"div"'][:2])
    if not NAME.fullmatch(name) or tag not in ("div", "span"):
        raise template.TemplateSyntaxError(f"livepart: a lowercase name and div or span, not {name!r} {tag!r}")
    nodelist = parser.parse(("endlivepart",))
    parser.delete_first_token()
    return LivePartNode(nodelist, name, tag)
