from django.conf import settings


def portal(request) -> dict:
    return {"demo_mode": settings.LABQUEUE_DEMO}
