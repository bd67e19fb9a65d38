"""Helpers shared by the context/tree/compaction conformance tests."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .golden import load_golden

MISSING = object()


def golden_params(name: str, *, functions: set[str] | None = None, exclude: set[str] | None = None):
    """``pytest.param(case, id=...)`` for every case of ``name`` (filtered by function).

    When the golden folder or file is missing this returns one parameter whose test
    fails (``load_golden`` is called again inside the test), so nothing is skipped.
    """
    try:
        doc = load_golden(name)
    except BaseException:  # pytest.fail raises a BaseException subclass
        return [pytest.param(MISSING, id=f"{name}-missing")]
    params = []
    for i, case in enumerate(doc["cases"]):
        fn = case.get("function", doc.get("function"))
        if functions is not None and fn not in functions:
            continue
        if exclude is not None and fn in exclude:
            continue
        tags = "-".join(case.get("tags") or [])
        ident = f"{i:03d}-{fn}" + (f"-{tags}" if tags else "")
        params.append(pytest.param(case, id=re.sub(r"[^\w.-]+", "_", ident)))
    if not params:
        params.append(pytest.param(MISSING, id=f"{name}-no-cases"))
    return params


def require_case(name: str, case: Any) -> dict:
    """Fail clearly when the parameter stands for missing data."""
    if case is MISSING:
        load_golden(name)  # fails with the folder/file message
        pytest.fail(f"{name}: no cases found for this test", pytrace=False)
    return case
