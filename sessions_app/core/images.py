"""Images attached to a user message, as pi stores them: after the text block, one
``{"type": "image", "data": <base64>, "mimeType": ...}`` block per image.

The type is read from the file's first bytes, never from what the browser says, and
only the four types every provider takes are accepted.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

# The signatures of the accepted types: (offset, bytes) pairs that must all match.
_SIGNATURES: tuple[tuple[str, tuple[tuple[int, bytes], ...]], ...] = (
    ("image/png", ((0, b"\x89PNG\r\n\x1a\n"),)),
    ("image/jpeg", ((0, b"\xff\xd8\xff"),)),
    ("image/gif", ((0, b"GIF87a"),)),
    ("image/gif", ((0, b"GIF89a"),)),
    ("image/webp", ((0, b"RIFF"), (8, b"WEBP"))),
)


class ImageError(ValueError):
    """An attachment that cannot go with the message, with the reason to show."""


def sniff_image_type(data: bytes) -> str | None:
    """The mime type of a PNG, JPEG, GIF or WebP file from its magic bytes, else None."""
    for mime, parts in _SIGNATURES:
        if all(data[offset : offset + len(magic)] == magic for offset, magic in parts):
            return mime
    return None


def _size(nbytes: int) -> str:
    return f"{nbytes / (1024 * 1024):.1f} MB" if nbytes >= 1024 * 1024 else f"{nbytes} bytes"


def check_count(count: int, max_count: int) -> None:
    """Too many images is refused first, before any of them is read."""
    if count > max_count:
        raise ImageError(f"{count} images attached: a message takes at most {max_count}.")


def image_blocks(
    images: Sequence[bytes], *, max_bytes: int, max_count: int
) -> list[dict[str, Any]]:
    """The content blocks of the attached images, checked: at most `max_count` images,
    each a non-empty PNG, JPEG, GIF or WebP file of at most `max_bytes`."""
    check_count(len(images), max_count)
    blocks = []
    for number, data in enumerate(images, start=1):
        if not data:
            raise ImageError(f"Image {number} is empty.")
        if len(data) > max_bytes:
            raise ImageError(f"Image {number} is over {_size(max_bytes)}: attach a smaller image.")
        mime = sniff_image_type(data)
        if mime is None:
            raise ImageError(f"Image {number} is not a PNG, JPEG, GIF or WebP file.")
        blocks.append(
            {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime}
        )
    return blocks


def takes_images(model: dict[str, Any] | None) -> bool:
    """Does this catalog model (pi's Model shape) accept image input?"""
    if not model:
        return False
    return "image" in (model.get("input") or ["text"])
