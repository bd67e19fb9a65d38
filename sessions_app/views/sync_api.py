"""The token API the sync client speaks (under /api/v1/, `responses.token_view`): JSON in
and out; the schema is in docs/sync.md. A token reaches only its owner's files and
sessions: anything else is a 404."""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse, StreamingHttpResponse
from django.urls import reverse

from sessions_app.core.errors import ServiceError
from sessions_app.params import json_body, query, raw_body
from sessions_app.presentation import api_schema
from sessions_app.responses import token_view
from sessions_app.selectors import exporter
from sessions_app.selectors import sync as sync_selectors
from sessions_app.services import sync


def _file_json(row) -> dict:
    session = row.session
    return {
        "client": row.client,
        "path": row.client_path,
        "offset": row.offset,
        "lines": row.lines,
        "session": session.pi_id if session else None,
        "url": reverse("sessions_app:session_detail", args=[session.pi_id]) if session else None,
        "pending": len(row.pending),
    }


@token_view()
def openapi(request, user):
    """This API's OpenAPI 3.1 document (presentation/api_schema.py)."""
    return JsonResponse(
        api_schema.openapi(
            max_batch_bytes=settings.PIWEB_SYNC_MAX_BATCH_BYTES,
            max_file_bytes=settings.PIWEB_MAX_UPLOAD_BYTES,
        )
    )


@token_view()
def whoami(request, user):
    return JsonResponse({"user": user.get_username()})


@token_view(methods=("POST",))
def push(request, user):
    body = json_body(request, settings.PIWEB_SYNC_MAX_BATCH_BYTES)
    row = sync.push(
        user,
        body.text("client"),
        body.text("path"),
        body.integer("offset"),
        body.data_bytes(),
        rewrite=body.flag("rewrite"),
    )
    return JsonResponse(_file_json(row))


@token_view(methods=("POST",))
def push_lines(request, user):
    """`push` with the lines as the body itself (pi's JSONL bytes, any encoding) and the
    other fields in the query: no JSON string to escape and parse (the client's way; an
    8 MiB batch spent about 100 ms of a 500 ms request in json.dumps and json.loads)."""
    params = query(request)
    offset = params.integer("offset")
    if offset is None:
        raise ServiceError('"offset" is required.', 400, "bad_parameter")
    row = sync.push(
        user,
        params.text("client"),
        params.text("path"),
        offset,
        raw_body(request, settings.PIWEB_SYNC_MAX_BATCH_BYTES),
        rewrite=params.flag("rewrite"),
    )
    return JsonResponse(_file_json(row))


@token_view()
def file_state(request, user):
    params = query(request)
    row = sync_selectors.synced_file(user, params.text("client"), params.text("path"))
    if row is None:
        return JsonResponse(
            {"error": "The server has no such file.", "code": "not_found", "offset": 0},
            status=404,
        )
    return JsonResponse({**_file_json(row), "piweb_lines": sync_selectors.pending_lines(row)})


@token_view()
def session_export(request, user, session_id: str):
    session = sync_selectors.owned_session(user, session_id)
    return StreamingHttpResponse(
        exporter.iter_session_chunks(session), content_type="application/x-ndjson"
    )


@token_view()
def pending(request, user):
    """Every file of one client with lines piweb added that it has not written back."""
    rows = sync_selectors.files_with_pending(user, query(request).text("client"))
    return JsonResponse(
        {
            "files": [
                {**_file_json(row), "piweb_lines": sync_selectors.pending_lines(row)}
                for row in rows
            ]
        }
    )
