"""Site facts every page shows, read from the settings when the page renders: tags rather than context
processors, so the error pages (500.html gets no request context) show them too."""

from django import template
from django.conf import settings

import portal

register = template.Library()


@register.simple_tag
def labqueue_version() -> str:
    return portal.__version__


@register.simple_tag
def support_contact() -> str:
    return settings.LABQUEUE_SUPPORT_CONTACT


@register.simple_tag
def site_notice() -> str:
    """What operators want everyone to know now (LABQUEUE_SITE_NOTICE), or ""."""
    return settings.LABQUEUE_SITE_NOTICE.strip()
