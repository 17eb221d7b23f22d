"""Each token's requests are counted per minute in the broker's Redis: past the limit, 429 with Retry-After,
for that token only."""

from tests.api.conftest import call, problem


def test_over_the_rate_a_token_gets_429_with_retry_after_and_another_token_does_not(
    client, settings, student, token_for
):
    settings.LABQUEUE_API_REQUESTS_PER_MINUTE = 3
    text, other = token_for(student), token_for(student)

    # Seven requests: even if a minute ends among them, one minute holds four, one over the limit.
    answers = [call(client, "get", "/api/v1/courses", text) for _ in range(7)]

    limited = [response for response in answers if response.status_code == 429]
    assert limited, [response.status_code for response in answers]
    assert 1 <= int(limited[0]["Retry-After"]) <= 60
    assert "more than 3 requests in a minute" in problem(limited[0])["detail"]
    assert call(client, "get", "/api/v1/courses", other).status_code == 200
