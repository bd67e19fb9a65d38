"""Helpers for the headless Chromium tests (tests/e2e/test_*_browser.py)."""

from __future__ import annotations


def collect_errors(page) -> list[str]:
    """The page's script errors and console errors, collected as they happen. Console
    errors "Failed to load resource" are left out (Chromium's /favicon.ico probe); a test
    that cares about failed requests hooks ``response`` itself."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda m: (
            errors.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    return errors
