"""The examples in docs/operations.md are configs the gateway accepts."""

from __future__ import annotations

import re

import pytest
import yaml

from gateway.ops.config import Config
from tests.project import ROOT

OPERATIONS = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
DEMO_MODEL = {"name": "demo", "backend": {"demo": True}}


@pytest.mark.parametrize("block", re.findall(r"```yaml\n(.*?)```", OPERATIONS, re.DOTALL))
def test_operations_yaml_examples_are_valid_configs(block, monkeypatch, tmp_path):
    monkeypatch.setenv("PARSEGATE_KEY_TEAM_A", "sk-team-a")
    data = yaml.safe_load(block)
    server = data.get("server", {})
    if "api_keys_file" in server:
        keys = tmp_path / "keys"
        keys.write_text("sk-from-file\n")
        server["api_keys_file"] = str(keys)
    Config.model_validate({"models": [DEMO_MODEL], **data})
