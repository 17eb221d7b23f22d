"""Who may read /metrics: nobody unless a token or an allow-list is set; then only a scraper that has one."""

import pytest

from tests.ops.metrics_helpers import TOKEN


@pytest.fixture
def metrics_token(settings) -> str:
    settings.LABQUEUE_METRICS_TOKEN = TOKEN
    return TOKEN


def test_metrics_are_off_and_answer_404_when_neither_a_token_nor_an_allow_list_is_set(client, db, settings):
    settings.LABQUEUE_METRICS_TOKEN = ""
    settings.LABQUEUE_METRICS_ALLOW = []

    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything")

    assert response.status_code == 404
    assert response.content == b"Not found: metrics are off on this portal.\n"


def test_a_wrong_or_missing_token_answers_403_in_plain_words(client, db, metrics_token):
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    missing = client.get("/metrics")

    for response in (wrong, missing):
        assert response.status_code == 403
        assert response["Content-Type"] == "text/plain"
        assert b"needs the bearer token set in LABQUEUE_METRICS_TOKEN" in response.content


def test_the_token_reads_the_metrics_in_prometheus_text_format(client, db, metrics_token):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    text = response.content.decode()
    for name in (
        "labqueue_jobs",
        "labqueue_job_submissions_total",
        "labqueue_job_sync_lag_seconds",
        "labqueue_usage_ingest_lag_seconds",
        "labqueue_association_reconcile_age_seconds",
        "labqueue_celery_queue_length",
        "labqueue_slurm_command_seconds",
        "labqueue_slurm_command_failures_total",
        'labqueue_source_up{source="database"} 1.0',
        'labqueue_source_up{source="redis"} 1.0',
    ):
        assert name in text


def test_the_allow_list_admits_listed_addresses_and_networks_and_refuses_others(client, db, settings):
    settings.LABQUEUE_METRICS_TOKEN = ""
    settings.LABQUEUE_METRICS_ALLOW = ["127.0.0.1", "10.20.0.0/16"]

    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.20.3.4").status_code == 200
    refused = client.get("/metrics", REMOTE_ADDR="10.21.3.4")
    assert refused.status_code == 403
    assert b"a client address listed in LABQUEUE_METRICS_ALLOW" in refused.content


def test_metrics_refuse_other_methods(client, db, metrics_token):
    assert client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405
