"""Response headers every page gets."""

from django.conf import settings


def content_security_policy(get_response):
    """Adds the Content-Security-Policy header (settings.PIWEB_CSP) to every response
    that has none of its own. Scripts come only from our static files, so markup that
    slipped through the sanitizer could not run, and nothing is loaded from elsewhere."""

    def middleware(request):
        response = get_response(request)
        response.setdefault("Content-Security-Policy", settings.PIWEB_CSP)
        return response

    return middleware
