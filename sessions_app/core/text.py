"""Text as every database, page and response can hold it."""

import re

_BAD_TEXT_RE = re.compile("[\x00\ud800-\udfff]")


def clean_text(value: str) -> str:
    """A string any database column accepts and UTF-8 encodes: NUL and lone surrogates
    (JSON can carry both) become U+FFFD."""
    if value.isascii():
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    return _BAD_TEXT_RE.sub("\ufffd", value)
