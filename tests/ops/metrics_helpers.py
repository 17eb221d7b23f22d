"""Reading /metrics as Prometheus would: the text format parsed by prometheus-client's own parser."""

from prometheus_client.parser import text_string_to_metric_families

TOKEN = "test-metrics-token"


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    """Every sample of one scrape with the token: {(sample name, sorted label pairs): value}."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **headers)
    assert response.status_code == 200, response.content
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }
