"""The agent loop's configuration (sessions_app/agent/loop.py)."""


def test_the_api_key_is_not_in_the_configs_repr():
    from sessions_app.agent.loop import LLMConfig

    config = LLMConfig(base_url="http://x", model="m", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(config)
    assert config.api_key == "sk-very-secret"
