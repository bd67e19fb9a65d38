"""What the agent loop is given (sessions_app/agent/providers/base.py's ResolvedModel)."""


def test_the_api_key_is_not_in_the_models_repr():
    from sessions_app.agent.providers.base import ResolvedModel

    resolved = ResolvedModel(
        model={"id": "m", "api": "openai-completions", "provider": "p"},
        api_key="sk-very-secret",
        headers={"Authorization": "Bearer sk-very-secret"},
    )
    assert "sk-very-secret" not in repr(resolved)
    assert resolved.api_key == "sk-very-secret"
