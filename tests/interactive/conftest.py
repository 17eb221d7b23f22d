"""Fixtures of the interactive-session tests: nginx in front of a portal (tests/interactive/proxy.py)."""

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from tests.interactive.proxy import RunningProxy, proxy_running

#: Where scripts/labcluster builds JupyterLab for the lab's jobs (README, "The lab cluster").
LAB_JUPYTER = ". /opt/labqueue/jupyter/bin/activate"
SECRET = "proxy-secret-for-the-tests"


@pytest.fixture
def portal_proxy(tmp_path_factory) -> Iterator[Callable[..., RunningProxy]]:
    """Start nginx with the shipped template in front of a web upstream: `portal_proxy("127.0.0.1:8001",
    secret=...)` gives the running proxy (its `base_url`); each one stops when the test ends."""
    with ExitStack() as stack:

        def start(web_upstream: str, *, secret: str) -> RunningProxy:
            directory = tmp_path_factory.mktemp("nginx")
            return stack.enter_context(proxy_running(web_upstream=web_upstream, secret=secret, directory=directory))

        yield start


@pytest.fixture
def notebook(assignment, settings):
    """The course's assignment as a notebook session, started with the lab's JupyterLab."""
    settings.LABQUEUE_INTERACTIVE_SETUP = LAB_JUPYTER
    settings.LABQUEUE_INTERACTIVE_PROXY_SECRET = SECRET
    assignment.interactive = True
    assignment.script_template = 'echo "preparing the session of $(whoami)"'
    assignment.save()
    return assignment
