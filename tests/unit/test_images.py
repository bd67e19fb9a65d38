"""Images attached to a chat message (core/images.py): the type from the magic bytes, and
the count and size limits, with pi's block shape."""

import base64

import pytest

from sessions_app.core.images import ImageError, image_blocks, sniff_image_type, takes_images
from tests.support.images import png

WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 20


@pytest.mark.parametrize(
    "data, mime",
    [
        (png(), "image/png"),
        (b"\xff\xd8\xff\xdb" + b"\x00" * 10, "image/jpeg"),
        (b"GIF87a" + b"\x00" * 10, "image/gif"),
        (b"GIF89a" + b"\x00" * 10, "image/gif"),
        (WEBP, "image/webp"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", None),  # a RIFF file that is no WebP
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", None),
        (b"", None),
    ],
)
def test_the_type_comes_from_the_magic_bytes(data, mime):
    assert sniff_image_type(data) == mime


def test_blocks_have_pis_shape_in_order():
    blocks = image_blocks([png(), WEBP], max_bytes=10_000, max_count=2)
    assert blocks == [
        {"type": "image", "data": base64.b64encode(png()).decode(), "mimeType": "image/png"},
        {"type": "image", "data": base64.b64encode(WEBP).decode(), "mimeType": "image/webp"},
    ]


@pytest.mark.parametrize(
    "images, words",
    [
        ([png()] * 3, "3 images attached: a message takes at most 2"),
        ([png(), b"x" * 10_001], "Image 2 is over 10000 bytes"),
        ([b"%PDF-1.7"], "Image 1 is not a PNG, JPEG, GIF or WebP file"),
        ([b""], "Image 1 is empty"),
    ],
)
def test_refusals_name_the_image_and_the_limit(images, words):
    with pytest.raises(ImageError, match=words):
        image_blocks(images, max_bytes=10_000, max_count=2)


def test_a_model_takes_images_only_when_its_input_says_so():
    assert takes_images({"input": ["text", "image"]})
    assert not takes_images({"input": ["text"]})
    assert not takes_images({})  # pi's default input is text only
    assert not takes_images(None)
