"""Template helpers for the chat panel."""

from django import template

from sessions_app.services import chat, llm

register = template.Library()


@register.simple_tag
def chat_panel(session, access):
    """Everything the chat panel needs besides `session` and `access`."""
    from sessions_app.views.chat import transcript_context

    profiles = llm.model_profiles()
    profile = llm.resolve_profile(session.model_profile)
    job = chat.active_run(session)
    return {
        "profile": profile,
        "profiles": sorted(profiles.values(), key=lambda p: p.name),
        "current_profile": profile.name if profile else session.model_profile,
        "how_to_configure": llm.HOW_TO_CONFIGURE,
        "can_edit": access.can_edit,
        "active_job": job,
        "run_state": (chat.run_state(session) if job else None) or None,
        **transcript_context(session),
    }
