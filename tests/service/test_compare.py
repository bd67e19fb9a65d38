"""Branch compare: common ancestor, per-branch stats, the compare page."""

import pytest

from sessions_app.selectors import compare
from sessions_app.selectors.compare import CompareError
from tests.support.branchy_session import build_branchy_session


@pytest.mark.django_db
@pytest.mark.embedded
def test_compare_two_branches(make_user):
    data = build_branchy_session(make_user())
    ids = data.ids
    result = compare.compare(data.session, ids["a3"], ids["b3"])
    assert result["ancestorId"] == ids["r1"]
    assert [e["id"] for e in result["a"]["segment"]] == [ids["a2"], ids["r2"], ids["a3"]]
    a, b = result["a"]["stats"], result["b"]["stats"]
    assert a["usage"]["totalTokens"] == 1900 and b["usage"]["totalTokens"] == 1100
    assert a["modifiedFiles"] == ["src/tokenizer.py"] and b["modifiedFiles"] == []
    assert a["errors"] == [] and [e["kind"] for e in b["errors"]] == ["bash failed"]
    assert "zebrafish" in b["errors"][0]["text"]
    assert a["lastAssistantText"] == "Fixed the parser. All tests pass."
    assert b["lastAssistantText"] == "The tests fail; giving up."
    # a node against its own ancestor: one side is empty
    same = compare.compare(data.session, ids["a1"], ids["a3"])
    assert same["ancestorId"] == ids["a1"] and same["a"]["segment"] == []
    with pytest.raises(CompareError):
        compare.compare(data.session, ids["a3"], "nope")


@pytest.mark.django_db
def test_compare_page(client, make_user):
    owner = make_user()
    data = build_branchy_session(owner)
    client.force_login(owner)
    page = client.get(
        f"/s/{data.session.pi_id}/compare/", {"a": data.ids["a3"], "b": data.ids["b3"]}
    )
    assert page.status_code == 200
    body = page.content.decode()
    assert f"<code>{data.ids['r1']}</code>" in body
    assert 'id="rv-side-a"' in body and 'id="rv-side-b"' in body
    assert "src/tokenizer.py" in body and "zebrafish" in body
    bad = client.get(f"/s/{data.session.pi_id}/compare/", {"a": "x", "b": "y"})
    assert bad.status_code == 400
