"""The base of every config.yaml mapping (config.py and its sections)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from gateway.ops.validation_errors import unknown_name


class Section(BaseModel):
    """A config mapping: strict types, unknown keys name the allowed ones,
    and a key left empty in YAML (`key:`) means "not set"."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: object) -> object:
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in cls.model_fields)
            if unknown:
                raise ValueError(unknown_name("key", unknown[0], list(cls.model_fields), "allowed keys"))
            return {key: value for key, value in data.items() if value is not None}
        return data
