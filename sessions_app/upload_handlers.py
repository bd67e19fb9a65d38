"""The import upload's handler: the file goes straight to disk, its size checked as it comes.

``ImportUploadHandler`` replaces Django's memory and temporary-file handlers for
``/import/`` only. It refuses a request whose Content-Length is already over
``PIWEB_MAX_UPLOAD_BYTES`` (plus the multipart envelope) before reading any of it, writes
the one file field ``file`` chunk by chunk into ``PIWEB_IMPORT_DIR`` (mode 0600, never
executable, no setuid or setgid bit whatever the client sends), and stops the upload
(``StopUpload``, the rest of the body unread) as soon as the file passes the limit.
The import job then reads the stored file in the worker and deletes it.
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopFutureHandlers, StopUpload
from django.http import QueryDict
from django.utils.datastructures import MultiValueDict

FIELD = "file"
ENVELOPE_BYTES = 1024 * 1024


def import_dir() -> Path:
    path = Path(settings.PIWEB_IMPORT_DIR)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def limit_text() -> str:
    return f"{settings.PIWEB_MAX_UPLOAD_BYTES / (1024 * 1024):.0f} MB"


class StoredUpload(UploadedFile):
    """An uploaded file already on disk at ``path`` (the handler's)."""

    def __init__(self, path: Path, name: str, size: int):
        super().__init__(file=None, name=name, content_type=None, size=size)
        self.path = path

    def close(self):
        return None


class ImportUploadHandler(FileUploadHandler):
    chunk_size = 64 * 1024

    def __init__(self, request=None):
        super().__init__(request)
        self.limit = int(settings.PIWEB_MAX_UPLOAD_BYTES)
        self.too_large = False
        self.path: Path | None = None
        self.fd: int | None = None
        self.size = 0

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > self.limit + ENVELOPE_BYTES:
            self.too_large = True  # nothing of the body is read
            return QueryDict(mutable=True), MultiValueDict()
        return None

    def new_file(self, field_name, file_name, content_type, content_length, *args, **kwargs):
        super().new_file(field_name, file_name, content_type, content_length, *args, **kwargs)
        if field_name != FIELD or self.fd is not None:
            raise StopUpload(connection_reset=True)  # one file, in the field the form has
        self.path = import_dir() / f"{uuid.uuid4().hex}.upload"
        # 0600 from the start and whatever the umask: the worker reads it, nobody else.
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchmod(self.fd, stat.S_IRUSR | stat.S_IWUSR)
        raise StopFutureHandlers()

    def receive_data_chunk(self, raw_data, start):
        self.size += len(raw_data)
        if self.size > self.limit:
            self.too_large = True
            self.discard()
            raise StopUpload(connection_reset=True)  # the rest is never read
        view = memoryview(raw_data)
        while view:
            view = view[os.write(self.fd, view) :]
        return None

    def file_complete(self, file_size):
        if self.fd is None:
            return None
        os.close(self.fd)
        self.fd = None
        return StoredUpload(self.path, self.file_name or "upload.jsonl", file_size)

    def upload_interrupted(self):
        self.discard()

    def discard(self) -> None:
        """Drop a partial file (refused, or the client went away)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None
