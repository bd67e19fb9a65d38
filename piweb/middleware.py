"""Response headers every page gets."""

from django.conf import settings

from sessions_app.rendering import render_time_budget


def content_security_policy(get_response):
    """Adds the Content-Security-Policy header (settings.PIWEB_CSP) to every response
    that has none of its own. Scripts come only from our static files, so markup that
    slipped through the sanitizer could not run, and nothing is loaded from elsewhere."""

    def middleware(request):
        response = get_response(request)
        response.setdefault("Content-Security-Policy", settings.PIWEB_CSP)
        return response

    return middleware


def response_size_cap(get_response):
    """A hard cap on what one page or partial may weigh (settings.PIWEB_MAX_RESPONSE_BYTES).

    Pages are bounded where they are built (previews, "show more"); this is the last
    line, so that no session, however large, makes a page the browser cannot hold.
    Downloads (attachments, streamed responses) are not pages and are not capped.
    """
    import logging

    from django.http import HttpResponse
    from django.template.loader import render_to_string

    log = logging.getLogger("piweb.limits")

    def middleware(request):
        response = get_response(request)
        limit = settings.PIWEB_MAX_RESPONSE_BYTES
        if (
            response.streaming
            or response.get("Content-Disposition", "").startswith("attachment")
            or len(response.content) <= limit
        ):
            return response
        log.warning(
            "response of %s bytes for %s cut (limit %s)", len(response.content), request.path, limit
        )
        replacement = HttpResponse(
            render_to_string(
                "response_too_large.html",
                {"size": len(response.content), "limit": limit},
                request=request,
            ),
            status=200 if response.status_code < 400 else response.status_code,
        )
        replacement["X-Piweb-Response-Cut"] = str(len(response.content))
        return replacement

    return middleware


def markdown_time_budget(get_response):
    """Each request spends at most settings.PIWEB_RENDER_SECONDS rendering Markdown (see
    sessions_app.rendering): hostile text cannot make a page take minutes."""

    def middleware(request):
        with render_time_budget(settings.PIWEB_RENDER_SECONDS):
            return get_response(request)

    return middleware
