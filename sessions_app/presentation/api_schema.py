"""The OpenAPI 3.1 document of the token API (`/api/v1/`, `views/sync_api.py`), served at
/api/v1/openapi.json. Written here by hand, next to nothing else, so it is one place to
read; tests/service/views/test_sync_api_schema.py validates the endpoints' real answers
(and the request bodies they take or refuse) against the served document, and checks
that every /api/v1/ route is in it.

Answers are closed (`additionalProperties: false`): a field added to an answer without
being documented here fails that test. Request bodies are open: the server ignores
fields it does not know."""

from __future__ import annotations

from typing import Any

JSON = "application/json"
JSONL = "application/x-ndjson"

_FILE_FIELDS: dict[str, Any] = {
    "client": {"type": "string", "description": "The machine's name, as the client sent it."},
    "path": {"type": "string", "description": "The file's path on that machine (home as ~)."},
    "offset": {
        "type": "integer",
        "minimum": 0,
        "description": "The end of the last complete line the server holds (bytes).",
    },
    "lines": {"type": "integer", "minimum": 0, "description": "The lines before `offset`."},
    "session": {
        "type": ["string", "null"],
        "description": "The pi session id (the header's `id`).",
    },
    "url": {"type": ["string", "null"], "description": "The session's page on this server."},
    "pending": {
        "type": "integer",
        "minimum": 0,
        "description": "Lines piweb added that the client has not written back yet.",
    },
}


def _object(properties: dict[str, Any], *, required=None, closed: bool = True) -> dict:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
    }
    if closed:
        schema["additionalProperties"] = False
    return schema


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(name: str, description: str) -> dict:
    return {"description": description, "content": {JSON: {"schema": _ref(name)}}}


def _refusals(*statuses: int) -> dict:
    """The error answers of an operation: every one is {"error", "code"}."""
    text = {
        400: "A parameter or the body is not what the operation takes.",
        401: "No token, or one that is unknown, revoked or expired.",
        404: "Not one of the token owner's files or sessions.",
        405: "Another method than the operation's.",
        409: "A gap, or lines that differ from the server's: `offset` is the server's.",
        413: "The body or the file is larger than the server takes.",
        429: "Too many bad tokens from this address; wait and try again.",
    }
    return {
        str(status): _json("Conflict" if status == 409 else "Error", text[status])
        for status in (401, 429, *statuses)
    }


_PUSH_RULES = (
    "Store complete lines that start at byte `offset` of the client's file. Lines the "
    "server holds already must be what it holds (the same batch twice changes nothing); "
    "a gap or a difference is 409 with the server's offset. A file the server lacks "
    "starts at offset 0 with its session header line. `rewrite` sends a file pi "
    "rewrote, whole, from offset 0."
)


def openapi(*, max_batch_bytes: int, max_file_bytes: int) -> dict:
    """The document, with this server's limits in its descriptions."""
    limits = (
        f" A request body is at most {max_batch_bytes} bytes; a file at most "
        f"{max_file_bytes} bytes."
    )
    identity = [
        {"name": "client", "in": "query", "required": True, "schema": {"type": "string"}},
        {"name": "path", "in": "query", "required": True, "schema": {"type": "string"}},
    ]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "piweb sync API",
            "version": "1",
            "description": (
                "pi session files sent from a user's own machine (piweb_sync.py), and "
                "piweb's lines read back. Every request carries `Authorization: Bearer "
                "<token>` (a personal access token, scope `sync`); a token reaches only "
                "its owner's files and sessions. See docs/sync.md."
            ),
        },
        "security": [{"token": []}],
        "paths": {
            "/api/v1/me": {
                "get": {
                    "operationId": "whoami",
                    "summary": "The token's owner.",
                    "responses": {"200": _json("Me", "The user name."), **_refusals(405)},
                }
            },
            "/api/v1/files/push": {
                "post": {
                    "operationId": "push",
                    "summary": "Send lines of a file, in a JSON body.",
                    "description": _PUSH_RULES + limits,
                    "requestBody": {
                        "required": True,
                        "content": {JSON: {"schema": _ref("PushBody")}},
                    },
                    "responses": {
                        "200": _json("File", "The file as the server now holds it."),
                        **_refusals(400, 405, 409, 413),
                    },
                }
            },
            "/api/v1/files/push.jsonl": {
                "post": {
                    "operationId": "pushLines",
                    "summary": "Send lines of a file as the body itself (what the client uses).",
                    "description": (
                        _PUSH_RULES + " The body is the file's bytes from `offset`, any "
                        "encoding, nothing escaped." + limits
                    ),
                    "parameters": [
                        *identity,
                        {
                            "name": "offset",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "integer", "minimum": 0},
                        },
                        {
                            "name": "rewrite",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "boolean", "default": False},
                        },
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            JSONL: {
                                "schema": {
                                    "type": "string",
                                    "contentMediaType": JSONL,
                                    "description": "Complete lines: it ends with a newline.",
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json("File", "The file as the server now holds it."),
                        **_refusals(400, 405, 409, 413),
                    },
                }
            },
            "/api/v1/files/state": {
                "get": {
                    "operationId": "fileState",
                    "summary": "How far the server has a file, and piweb's lines for it.",
                    "parameters": identity,
                    "responses": {
                        "200": _json("FileWithLines", "The file and piweb's pending lines."),
                        "404": _json("Missing", "The server has no such file (offset 0)."),
                        **_refusals(405),
                    },
                }
            },
            "/api/v1/files/pending": {
                "get": {
                    "operationId": "pending",
                    "summary": "The client's files with lines piweb added, to write back.",
                    "parameters": identity[:1],
                    "responses": {
                        "200": _json("Pending", "The files, each with its lines."),
                        **_refusals(405),
                    },
                }
            },
            "/api/v1/sessions/{session_id}/export.jsonl": {
                "get": {
                    "operationId": "exportSession",
                    "summary": "One of the token owner's sessions as pi JSONL.",
                    "parameters": [
                        {
                            "name": "session_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": {
                            "description": "The session file, as pi would write it.",
                            "content": {JSONL: {"schema": {"type": "string"}}},
                        },
                        **_refusals(404, 405),
                    },
                }
            },
            "/api/v1/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "summary": "This document.",
                    "responses": {
                        "200": {
                            "description": "The OpenAPI 3.1 document.",
                            "content": {JSON: {"schema": {"type": "object"}}},
                        },
                        **_refusals(405),
                    },
                }
            },
        },
        "components": {
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Me": _object({"user": {"type": "string"}}),
                "PushBody": _object(
                    {
                        "client": {"type": "string", "minLength": 1, "maxLength": 100},
                        "path": {"type": "string", "minLength": 1, "maxLength": 4096},
                        "offset": {"type": "integer", "minimum": 0},
                        "data": {
                            "type": "string",
                            "default": "",
                            "description": "Complete lines (ending with a newline).",
                        },
                        "encoding": {
                            "enum": ["utf-8", "base64"],
                            "default": "utf-8",
                            "description": "How `data` holds the bytes.",
                        },
                        "rewrite": {"type": "boolean", "default": False},
                    },
                    required=["client", "path", "offset"],
                    closed=False,
                ),
                "File": _object(_FILE_FIELDS),
                "PiwebLine": _object(
                    {
                        "id": {"type": "string", "description": "The entry's id."},
                        "line": {"type": "string", "description": "The line, no newline."},
                    }
                ),
                "FileWithLines": _object(
                    {
                        **_FILE_FIELDS,
                        "piweb_lines": {"type": "array", "items": _ref("PiwebLine")},
                    }
                ),
                "Pending": _object({"files": {"type": "array", "items": _ref("FileWithLines")}}),
                "Error": _object(
                    {
                        "error": {"type": "string", "description": "What was wrong, to show."},
                        "code": {"type": "string", "description": "A stable word for it."},
                        "offset": {"type": "integer", "minimum": 0},
                    },
                    required=["error", "code"],
                ),
                "Conflict": _object(
                    {
                        "error": {"type": "string"},
                        "code": {"const": "conflict"},
                        "offset": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "Where the file ends on the server: send from it.",
                        },
                    }
                ),
                "Missing": _object(
                    {
                        "error": {"type": "string"},
                        "code": {"const": "not_found"},
                        "offset": {"const": 0},
                    }
                ),
            },
        },
    }
