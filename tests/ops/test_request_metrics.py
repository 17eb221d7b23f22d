"""HTTP requests on /metrics: how many each view answered, by method and status, and how long they took (a
histogram), counted by every web process into the broker's Redis so any one of them answers the scrape."""

import pytest

from ops.metrics import REQUESTS_KEY
from portal.broker import broker_redis
from tests.ops.metrics_helpers import TOKEN, scrape

pytestmark = pytest.mark.django_db


@pytest.fixture
def metrics_on(settings):
    settings.LABQUEUE_METRICS_TOKEN = TOKEN
    broker_redis().delete(REQUESTS_KEY)
    yield
    broker_redis().delete(REQUESTS_KEY)


def test_requests_are_counted_by_view_method_and_status_with_their_latency(client, student, metrics_on):
    client.force_login(student)
    for _ in range(3):
        assert client.get("/jobs/").status_code == 200
    client.head("/healthz")
    client.get("/no-such-page/")

    samples = scrape(client)

    jobs = (("method", "GET"), ("status", "200"), ("view", "jobs:job-list"))
    assert samples[("labqueue_http_requests_total", jobs)] == 3
    assert samples[("labqueue_http_request_duration_seconds_count", jobs)] == 3
    assert samples[("labqueue_http_request_duration_seconds_bucket", tuple(sorted((*jobs, ("le", "+Inf")))))] == 3
    assert samples[("labqueue_http_request_duration_seconds_sum", jobs)] > 0
    health = (("method", "HEAD"), ("status", "200"), ("view", "healthz"))
    assert samples[("labqueue_http_requests_total", health)] == 1
    unmatched = (("method", "GET"), ("status", "404"), ("view", "unmatched"))
    assert samples[("labqueue_http_requests_total", unmatched)] == 1


def test_the_latency_buckets_are_cumulative(client, metrics_on):
    for _ in range(2):
        client.get("/healthz")

    samples = scrape(client)

    series = (("method", "GET"), ("status", "200"), ("view", "healthz"))
    buckets = sorted(
        (float(dict(labels)["le"]), value)
        for (name, labels), value in samples.items()
        if name == "labqueue_http_request_duration_seconds_bucket"
        and tuple(pair for pair in labels if pair[0] != "le") == series
    )
    values = [value for _, value in buckets]
    assert values == sorted(values) and values[-1] == 2
