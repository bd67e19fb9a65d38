"""core/endpoints.py: the models box of an endpoint, read into pi Model specs and written
back the same way; each mistake named with its line."""

import pytest

from sessions_app.core.endpoints import EndpointError, models_text, parse_models

pytestmark = pytest.mark.embedded  # needs no database: it runs in both passes


def test_one_model_a_line_with_windows_and_prices():
    models = parse_models(
        "# a comment\nllama3.1:8b, 128k, 4096, 0.5, 1.5\n\nqwen/qwen3-coder, 1M\nsmall"
    )
    assert models[0] == {
        "id": "llama3.1:8b",
        "name": "llama3.1:8b",
        "contextWindow": 128_000,
        "maxTokens": 4096,
        "cost": {"input": 0.5, "output": 1.5, "cacheRead": 0, "cacheWrite": 0},
    }
    assert models[1]["contextWindow"] == 1_000_000 and "maxTokens" not in models[1]
    assert models[2] == {
        "id": "small",
        "name": "small",
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }


def test_written_back_as_it_reads():
    text = "llama3.1:8b, 128000, 4096, 0.5, 1.5\nsmall, 128000, 16384, 0, 0"
    assert models_text(parse_models(text)) == text
    assert parse_models(models_text(parse_models("small"))) == [
        {**parse_models("small")[0], "contextWindow": 128000, "maxTokens": 16384}
    ]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "at least one model"),
        ("# only a comment", "at least one model"),
        ("a, 1, 2, 3, 4, 5", "Line 1: at most five values"),
        ("ok\nbad id!", "Line 2: 'bad id!' is not a model id"),
        ("a\na", "Line 2: a is listed twice"),
        ("a, lots", "Line 1: the context window must be a number of tokens"),
        ("a, 0", "Line 1: the context window must be above zero"),
        ("a, 1k, -5", "Line 1: the max output must be a number of tokens"),
        ("a, , , cheap", "Line 1: the input price must be a number of dollars"),
        ("a, , , 1, -2", "Line 1: the output price must be 0 or more"),
    ],
)
def test_mistakes_are_named_with_their_line(text, says):
    with pytest.raises(EndpointError, match=says):
        parse_models(text)


def test_at_most_200_models():
    parse_models("\n".join(f"m{i}" for i in range(200)))
    with pytest.raises(EndpointError, match="At most 200"):
        parse_models("\n".join(f"m{i}" for i in range(201)))
