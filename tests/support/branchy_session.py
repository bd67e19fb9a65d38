"""A small branchy session for the review tests (real services, no mocks).

u1 user "Please fix the parser bug in tokenizer.py"
└ a1 assistant: reads src/tokenizer.py
  └ r1 toolResult read
    ├ a2 assistant: edits src/tokenizer.py          (branch A)
    │ └ r2 toolResult edit
    │   └ a3 assistant "Fixed the parser. All tests pass."
    └ b2 assistant: runs pytest via bash            (branch B)
      └ q2 toolResult bash, isError "FAILED … zebrafish"
        └ b3 assistant "The tests fail; giving up." (session leaf)
"""

from dataclasses import dataclass

from sessions_app.services import sessions


def user(text):
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant(text="", calls=(), total=0, stop="stop"):
    content = [{"type": "text", "text": text}] if text else []
    for call_id, name, args in calls:
        content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": content,
            "provider": "scripted",
            "model": "scripted-model",
            "usage": {
                "input": total // 2,
                "output": total - total // 2,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": total,
            },
            "stopReason": "toolUse" if calls else stop,
            "timestamp": 2,
        },
    }


def tool_result(call_id, name, text, is_error=False):
    return {
        "type": "message",
        "message": {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
            "timestamp": 3,
        },
    }


@dataclass
class Branchy:
    session: object
    ids: dict


def build_branchy_session(owner, cwd="/work/project-alpha", name="Parser fix") -> Branchy:
    session = sessions.create_session(owner=owner, cwd=cwd, name=name)
    ids = {}

    def add(key, payload, parent=None):
        kwargs = {} if parent is None else {"parent_pi_id": ids[parent]}
        ids[key] = sessions.append_entry(session, payload, actor=owner, **kwargs).pi_id

    add("u1", user("Please fix the parser bug in tokenizer.py"))
    add("a1", assistant("Reading the file.", [("c1", "read", {"path": "src/tokenizer.py"})], 500))
    add("r1", tool_result("c1", "read", "def tokenize(text):\n    return text.split()"))
    add(
        "a2",
        assistant("I will edit it.", [("c2", "edit", {"path": "src/tokenizer.py"})], 700),
        "r1",
    )
    add("r2", tool_result("c2", "edit", "Edited src/tokenizer.py"))
    add("a3", assistant("Fixed the parser. All tests pass.", total=1200))
    add("b2", assistant("Running tests.", [("c3", "bash", {"command": "pytest"})], 300), "r1")
    add("q2", tool_result("c3", "bash", "FAILED test_parser.py::test_zebrafish", is_error=True))
    add("b3", assistant("The tests fail; giving up.", total=800))
    session.refresh_from_db()
    return Branchy(session=session, ids=ids)
