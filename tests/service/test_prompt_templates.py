"""A user's own templates (services/prompt_templates.py): names pi and the chat box can
use, valid front matter, renames, limits, and a folder imported in one transaction."""

import pytest

from sessions_app.models import PromptTemplate
from sessions_app.services import prompt_templates as service

pytestmark = [pytest.mark.django_db]


@pytest.mark.parametrize(
    "name, why",
    [
        ("", "Give the template a name"),
        ("two words", "no spaces"),
        ("a/b", "no spaces or slashes"),
        (".hidden", "starting with a dot"),
        ("compact", "piweb's own command"),
        ("skill:x", "piweb's own command"),
        ("x" * 101, "at most 100"),
    ],
)
def test_names_that_cannot_be_a_command_are_refused(make_user, name, why):
    with pytest.raises(service.TemplateError, match=why):
        service.save_template(make_user(), name, "text")


def test_a_name_given_as_a_file_name_loses_its_md(make_user):
    assert service.save_template(make_user(), "review.md", "x").name == "review"


def test_saving_again_changes_the_text_and_a_rename_keeps_one_row(make_user):
    user = make_user()
    service.save_template(user, "a", "one")
    service.save_template(user, "a", "two")
    service.save_template(user, "b", "three", replacing="a")
    assert list(PromptTemplate.objects.filter(user=user).values_list("name", "text")) == [
        ("b", "three")
    ]
    service.save_template(user, "c", "four")
    with pytest.raises(service.TemplateError, match="already have"):
        service.save_template(user, "b", "x", replacing="c")


def test_too_large_or_unparseable_text_is_refused(make_user, settings):
    user = make_user()
    with pytest.raises(service.TemplateError, match="KB"):
        service.save_template(user, "big", "x" * (service.MAX_TEMPLATE_BYTES + 1))
    with pytest.raises(service.TemplateError, match="YAML"):
        service.save_template(user, "bad", "---\nkey: [\n---\n")
    assert not PromptTemplate.objects.exists()


def test_delete_is_the_users_own(make_user):
    owner, other = make_user(), make_user()
    service.save_template(owner, "a", "x")
    with pytest.raises(service.TemplateError) as refused:
        service.delete_template(other, "a")
    assert refused.value.status == 404
    service.delete_template(owner, "a")
    assert not PromptTemplate.objects.exists()


def test_import_saves_the_md_files_replaces_same_names_and_reports_the_rest(make_user):
    user = make_user()
    service.save_template(user, "review", "old")
    report = service.import_templates(
        user,
        [
            ("prompts/review.md", b"new $1"),
            ("prompts/fix.md", b"Fix $@"),
            ("prompts/.secret.md", b"x"),
            ("prompts/readme.txt", b"x"),
            ("prompts/bad.md", b"---\nk: [\n---\n"),
        ],
    )
    assert sorted(report.saved) == ["fix", "review"]
    assert [name for name, _why in report.skipped] == [".secret.md", "readme.txt", "bad.md"]
    assert dict(PromptTemplate.objects.filter(user=user).values_list("name", "text")) == {
        "review": "new $1",
        "fix": "Fix $@",
    }


def test_an_import_over_the_limit_saves_nothing(make_user, monkeypatch):
    user = make_user()
    monkeypatch.setattr(service, "MAX_TEMPLATES", 1)
    with pytest.raises(service.TemplateError, match="at most 1"):
        service.import_templates(user, [("a.md", b"a"), ("b.md", b"b")])
    assert not PromptTemplate.objects.exists()
