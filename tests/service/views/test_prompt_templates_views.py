"""The Templates page's views (sessions_app/views/prompt_templates.py): login, methods,
CSRF, and what each htmx form gives back (the manager partial, refusals in it)."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from sessions_app.models import PromptTemplate
from tests.support.web import client_for

pytestmark = [pytest.mark.django_db]

FORMS = ["templates_save", "templates_delete", "templates_import"]


def url(name: str) -> str:
    return reverse(f"sessions_app:{name}")


def test_it_requires_login(client):
    for name in ["templates_page", "templates_edit", *FORMS]:
        response = client.get(url(name))
        assert response.status_code == 302 and response["Location"].startswith("/login/"), name


def test_the_forms_take_only_posts_with_a_csrf_token(make_user):
    user = make_user()
    client = client_for(user)
    assert {n: client.get(url(n)).status_code for n in FORMS} == dict.fromkeys(FORMS, 405)
    strict = client_for(user, csrf=True)
    assert strict.post(url("templates_save"), {"name": "x", "text": "y"}).status_code == 403
    assert not PromptTemplate.objects.filter(user=user).exists()


def test_save_edit_rename_and_delete(make_user):
    user = make_user()
    client = client_for(user)
    page = client.get(url("templates_page"))
    assert page.status_code == 200 and b'id="templates-form"' in page.content
    saved = client.post(
        url("templates_save"),
        {"name": "review", "text": "---\nargument-hint: <file>\n---\nReview $1", "original": ""},
    )
    assert saved.status_code == 200 and b"Saved /review." in saved.content
    assert b"&lt;file&gt;" in saved.content  # the hint, escaped
    edit = client.get(url("templates_edit"), {"name": "review"})
    assert b"Edit /review" in edit.content and b"Review $1" in edit.content
    client.post(url("templates_save"), {"name": "check", "text": "Check $1", "original": "review"})
    assert list(PromptTemplate.objects.filter(user=user).values_list("name", "text")) == [
        ("check", "Check $1")
    ]
    gone = client.post(url("templates_delete"), {"name": "check"})
    assert b"Deleted /check." in gone.content and not PromptTemplate.objects.exists()
    assert client.post(url("templates_delete"), {"name": "check"}).status_code == 404


def test_a_refused_template_keeps_what_was_typed(make_user):
    client = client_for(make_user())
    response = client.post(
        url("templates_save"), {"name": "model", "text": "Keep me", "original": ""}
    )
    assert response.status_code == 400
    assert b"piweb&#x27;s own command" in response.content and b"Keep me" in response.content
    bad = client.post(url("templates_save"), {"name": "x", "text": "---\na: [\n---\nb"})
    assert bad.status_code == 400 and b"not valid YAML" in bad.content
    assert not PromptTemplate.objects.exists()


def test_another_users_templates_are_not_shown_or_editable(make_user):
    owner, other = make_user(), make_user()
    PromptTemplate.objects.create(user=owner, name="private", text="secret words")
    client = client_for(other)
    assert b"secret words" not in client.get(url("templates_page")).content
    assert client.get(url("templates_edit"), {"name": "private"}).status_code == 404
    assert client.post(url("templates_delete"), {"name": "private"}).status_code == 404
    assert PromptTemplate.objects.filter(user=owner).count() == 1


def test_a_folder_is_imported_and_what_is_not_a_template_is_named(make_user):
    user = make_user()
    files = [
        SimpleUploadedFile("prompts/review.md", b"Review $1"),
        SimpleUploadedFile("prompts/.hidden.md", b"no"),
        SimpleUploadedFile("prompts/notes.txt", b"no"),
        SimpleUploadedFile("prompts/latin.md", "caf\xe9".encode("latin-1")),
    ]
    response = client_for(user).post(url("templates_import"), {"files": files})
    assert response.status_code == 200
    text = response.content.decode()
    assert "Imported 1 template: /review." in text
    assert ".hidden.md" in text and "notes.txt" in text and "not UTF-8" in text
    assert list(PromptTemplate.objects.filter(user=user).values_list("name", flat=True)) == [
        "review"
    ]
