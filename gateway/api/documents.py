"""The text of a document a client sends inline (an Anthropic `document`
block, a Responses `input_file` with its `file_data`), for a backend that
reads text (docs/api.md#images-and-documents-in-tool-results).

A PDF's text is extracted with pypdf (`pip install 'parsegate[pdf]'`);
without it, or when the PDF cannot be read, the model is told in words
what was there, so that an agent's run goes on. Plain-text documents are
their text. The gateway fetches nothing: the surfaces refuse a document
given by URL or file id.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
import urllib.parse

log = logging.getLogger("parsegate.documents")
PDF = "application/pdf"


def document_text(media_type: str, data: str, title: str | None = None, *, encoded: bool = True) -> str:
    """The text a model reads for a document of `media_type` whose bytes
    are `data`, base64 unless not `encoded` (a text document's own text)."""
    heading = f"[document{': ' + title if title else ''} ({media_type})]"
    if not media_type.startswith("text/") and media_type != PDF:
        return f"{heading} not shown: only PDF and text documents are read"
    if not encoded:
        return f"{heading}\n{data}"
    try:
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"{heading} not shown: its data is not base64"
    if media_type != PDF:
        return f"{heading}\n{content.decode('utf-8', 'replace')}"
    return f"{heading}\n{_pdf_text(content)}"


def data_url_document(file_data: str, filename: str | None) -> str:
    """A Responses `input_file`'s text: `file_data` is a `data:` URL
    (`data:application/pdf;base64,…`, as the openai SDK sends it) or bare
    base64, which is taken as a PDF."""
    if not (file_data.startswith("data:") and "," in file_data):
        return document_text(PDF, file_data, filename)
    header, data = file_data[5:].split(",", 1)
    media_type = header.split(";", 1)[0] or "text/plain"  # RFC 2397's default
    if header.endswith(";base64"):
        return document_text(media_type, data, filename)
    return document_text(media_type, urllib.parse.unquote(data), filename, encoded=False)


def _pdf_text(content: bytes) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        return "(its text is not shown: this gateway reads PDFs with the parsegate[pdf] extra, not installed)"
    try:
        reader = PdfReader(io.BytesIO(content))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError) as error:  # a damaged or hostile file
        log.warning("a PDF document could not be read: %s", error)
        return "(its text is not shown: the PDF could not be read)"
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    return text or f"(a PDF of {len(pages)} pages with no text layer: scanned pages are not read)"
