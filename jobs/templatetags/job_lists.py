"""Template filters for the job lists."""

from django import template

from jobs.explanations import explanation_label as label_of

register = template.Library()


@register.filter
def explanation_label(key: str) -> str:
    """The explanation's title for people, never its machine key ("cuda-out-of-memory")."""
    return label_of(key)
