"""Errors caused by the user's input: printed as one line by the CLI, never as a traceback."""

from __future__ import annotations


class UserError(Exception):
    """Bad input (a file, a field, a preset, an endpoint): the message names the thing."""


def as_user_error(*exc_types: type[BaseException]):
    """Decorator: re-raise the given exception types as UserError with the same message."""
    import functools

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            try:
                return fn(*a, **kw)
            except exc_types as e:  # type: ignore[misc]
                raise UserError(str(e)) from e

        return wrapper

    return deco


def field_error(e, prefix: str = "") -> str:
    """The first error of a pydantic ValidationError as "field 'a.b': message" (one line);
    ``prefix`` names where the validated part sits ("spec." for spec.yaml's spec section)."""
    err = e.errors()[0]
    field = prefix + ".".join(str(x) for x in err["loc"]) or "(top level)"
    return f"field '{field}': {err['msg']}"


def yaml_error(e) -> str:
    """A YAML parse error as one line: what is wrong and where (line, column), without the
    multi-line excerpt PyYAML prints."""
    mark = getattr(e, "problem_mark", None)
    what = getattr(e, "problem", None) or str(e).splitlines()[0]
    return f"{what} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else what
