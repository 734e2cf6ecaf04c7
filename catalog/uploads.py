"""An uploaded catalog (.toml or a zip of them) as (file name, text) pairs, with bounded cost:
the upload, each file, their total once unzipped and their number are capped."""

from __future__ import annotations

import zipfile
import zlib
from typing import Any

from catalog.errors import CatalogError
from catalog.export import COURSE_FILE

MAX_UPLOAD = 2_000_000
MAX_FILES = 200
MAX_UNZIPPED = 10_000_000


def uploaded_files(upload: Any) -> tuple[list[tuple[str, str]], list[str]]:
    """The catalog files and one `file: field: problem` line per file that is not UTF-8 text.
    Raises CatalogError when the upload itself is unusable (missing, too big, not a zip)."""
    if upload is None or upload.size > MAX_UPLOAD:
        raise CatalogError("upload", "file", f"choose a .toml or .zip file of at most {MAX_UPLOAD // 1_000_000} MB")
    named = _zip_members(upload) if upload.name.endswith(".zip") else [(upload.name, upload.read())]
    files, refused = [], []
    for name, blob in named:
        try:
            files.append((name, blob.decode("utf-8")))
        except UnicodeDecodeError:
            refused.append(f"{name}: file: is not UTF-8 text")
    return files, refused


def _zip_members(upload: Any) -> list[tuple[str, bytes]]:
    try:
        with zipfile.ZipFile(upload) as archive:
            members = [i for i in archive.infolist() if i.filename.endswith(".toml")
                       and i.filename.rsplit("/", 1)[-1] != COURSE_FILE]
            if len(members) > MAX_FILES:
                raise CatalogError(upload.name, "file", f"holds {len(members)} catalog files; at most {MAX_FILES}")
            if sum(i.file_size for i in members) > MAX_UNZIPPED or any(i.file_size > MAX_UPLOAD for i in members):
                raise CatalogError(upload.name, "file", f"unzips to more than {MAX_UNZIPPED // 1_000_000} MB")
            if len({i.header_offset for i in archive.infolist()}) != len(archive.infolist()):
                raise CatalogError(upload.name, "file", "has entries that share their data (a zip bomb's trick)")
            files, left = [], MAX_UNZIPPED
            for info in members:
                blob = _member_bytes(archive, info, min(MAX_UPLOAD, left), upload.name)
                left -= len(blob)
                files.append((info.filename.rsplit("/", 1)[-1], blob))
            return files
    except CatalogError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError,
            ValueError, zlib.error) as exc:  # corrupt, encrypted (RuntimeError), an unsupported compression
        raise CatalogError(upload.name, "file", f"is not a zip archive this server can read ({exc})") from None


CHUNK = 65_536


def _member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, upload: str) -> bytes:
    """The member's bytes, at most `limit`, inflated a chunk at a time and counted as they come: its header's
    size is the archive's own claim (archive.read() would inflate the whole stream in memory before cutting
    it there)."""
    out = bytearray()
    with archive.open(info) as stream:
        while chunk := stream.read(CHUNK):
            out += chunk
            if len(out) > limit:
                raise CatalogError(upload, "file", f"unzips to more than {MAX_UNZIPPED // 1_000_000} MB")
    return bytes(out)
