from portal.celery import app as celery_app

#: The release, shown in every page's footer and sent with error reports; kept equal to pyproject.toml's
#: [project] version (tests/portal/test_version.py checks it) and to CHANGELOG.md's latest release.
__version__ = "0.9.0"

__all__ = ["__version__", "celery_app"]
