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
