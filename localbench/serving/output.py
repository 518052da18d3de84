"""What a structured reply must look like: one JSON schema, and how a reply is validated against it.

An OutputSpec comes either from a pydantic model (agent actions, judge labels) or from a raw JSON
schema (``localbench generate --schema FILE``). Engines only ever see ``spec.schema``; callers get
``spec.validate(text)`` back as a pydantic object or a plain dict.
"""

from __future__ import annotations

from localbench.errors import UserError

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError


class OutputValidationError(ValueError):
    """A reply that does not match its schema."""


class SchemaFileError(UserError, ValueError):
    """A schema file that cannot be used (bad JSON, not a valid JSON schema)."""


@dataclass(frozen=True)
class OutputSpec:
    """A JSON schema plus the pydantic model it came from, if any."""

    schema: dict[str, Any]
    model: type[BaseModel] | None = None
    name: str = "output"
    _validator: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def from_model(cls, model: type[BaseModel]) -> "OutputSpec":
        return cls(schema=model.model_json_schema(), model=model, name=model.__name__)

    @classmethod
    def from_schema(cls, schema: dict[str, Any], name: str = "output") -> "OutputSpec":
        import jsonschema

        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as e:
            path = "/".join(str(p) for p in e.path) or "(root)"
            raise SchemaFileError(f"invalid JSON schema at {path}: {e.message}") from e
        validator = jsonschema.validators.validator_for(schema)(schema)
        return cls(schema=schema, model=None, name=name, _validator=validator)

    @classmethod
    def from_file(cls, path: str | Path) -> "OutputSpec":
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise SchemaFileError(f"{p}: cannot read schema file: {e.strerror}") from e
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as e:
            raise SchemaFileError(f"{p}: not valid JSON (line {e.lineno}, column {e.colno}): {e.msg}") from e
        if not isinstance(schema, dict):
            raise SchemaFileError(f"{p}: a JSON schema must be an object, got {type(schema).__name__}")
        try:
            return cls.from_schema(schema, name=p.stem)
        except SchemaFileError as e:
            raise SchemaFileError(f"{p}: {e}") from e

    @property
    def schema_json(self) -> str:
        """Canonical JSON text of the schema (sorted keys, no spaces): what is hashed and sent."""
        return json.dumps(self.schema, sort_keys=True, separators=(",", ":"))

    @property
    def schema_hash(self) -> str:
        return hashlib.sha256(self.schema_json.encode()).hexdigest()[:16]

    def validate(self, text: str) -> Any:
        """Parse and validate a reply; raises OutputValidationError with the reason."""
        if self.model is not None:
            try:
                return self.model.model_validate_json(text)
            except ValidationError as e:
                raise OutputValidationError(_short(str(e))) from e
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise OutputValidationError(f"not valid JSON: {e.msg} at char {e.pos}") from e
        errors = sorted(self._validator.iter_errors(obj), key=lambda err: list(err.path))
        if errors:
            err = errors[0]
            where = "/".join(str(p) for p in err.path) or "(root)"
            raise OutputValidationError(f"{where}: {err.message}")
        return obj


def _short(s: str, n: int = 300) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."
