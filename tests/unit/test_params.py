"""Typed request values (sessions_app/params.py): what each reader returns, and the 400
that names the field when a value is not of its type."""

import pytest

from sessions_app.core.errors import ServiceError
from sessions_app.params import Params


def test_text_readers_default_strip_and_cut():
    values = Params({"name": "  pi  ", "long": "abcdef", "empty": ""})
    assert values.text("name") == "  pi  " and values.stripped("name") == "pi"
    assert values.text("missing", "fallback") == "fallback"
    assert values.text("long", limit=3) == "abc"
    assert values.optional("empty") is None and values.optional("name") == "  pi  "


def test_flags_and_presence():
    values = Params({"on": "Yes", "off": "0", "button": "x"})
    assert values.flag("on") and not values.flag("off") and not values.flag("missing")
    assert values.present("button") and not values.present("missing")


def test_integer_defaults_and_clamps():
    values = Params({"n": "42", "blank": ""})
    assert values.integer("n") == 42 and values.integer("blank", 7) == 7
    assert values.integer("n", high=10) == 10 and values.integer("n", low=50) == 50


def test_a_value_not_of_its_type_is_a_400_naming_the_field():
    with pytest.raises(ServiceError) as bad:
        Params({"start": "ten"}).integer("start")
    assert (bad.value.status, bad.value.code) == (400, "bad_parameter")
    assert str(bad.value).startswith("start: expected a whole number")
    with pytest.raises(ServiceError) as unknown:
        Params({"scope": "everything"}).choice("scope", ["path", "all"], "path")
    assert unknown.value.status == 400 and "scope" in str(unknown.value)
    assert Params({}).choice("scope", ["path", "all"], "path") == "path"
