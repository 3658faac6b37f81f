"""A model's `response_template:` file: a Hugging Face tokenizer_config.json
whose `response_template` key holds the declarative response format
(transformers' `tokenizer.parse_response()`), or a JSON file that is the
template itself. It is compiled once, at config load
(`parsers.formats.response_template`); every failure names the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from parsers.formats.response_template import ResponseTemplateError, TemplateFormats, compile_response_template

TEMPLATE_KEY = "response_template"


def load_response_template(path: Path) -> TemplateFormats:
    """The formats the template in `path` declares; ValueError naming the file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read: {error}") from None
    except ValueError as error:
        raise ValueError(f"{path}: not valid JSON: {error}") from None
    template = document.get(TEMPLATE_KEY, document) if isinstance(document, dict) else document
    if isinstance(template, dict) and "fields" not in template:
        raise ValueError(f"{path}: no {TEMPLATE_KEY} in the file (a tokenizer_config.json key, or the template itself)")
    try:
        return compile_response_template(template)
    except ResponseTemplateError as error:
        raise ValueError(f"{path}: {error}") from None
