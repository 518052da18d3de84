"""Errors caused by the user's input: printed as one line by the CLI, never as a traceback."""

from __future__ import annotations


import errno as _errno

# Exit statuses of the `localbench` command (docs/simulation.md, "Exit statuses", lists them).
EXIT_OK = 0
EXIT_INCOMPLETE = 1  # engine failures stopped some of the work (dead server, out of memory): rerun resumes;
# also another command holding the run directory (RunLocked) and a run whose every simulation failed
EXIT_BAD_INPUT = 2  # a file, field, flag, path or preset that is wrong (also the CLI's own usage errors)
EXIT_CANNOT_WRITE = 3  # disk full, read-only directory, --out is a file: nothing already written is lost
EXIT_INTERRUPTED = 130  # Ctrl-C


class UserError(Exception):
    """Bad input (a file, a field, a preset, an endpoint): the message names the thing."""

    exit_code = EXIT_BAD_INPUT


class IncompleteRun(UserError):
    """Some of a stage's work was stopped by engine errors; what finished is kept, a rerun resumes."""

    exit_code = EXIT_INCOMPLETE


# errno -> what to do about it, for a path localbench could not write
_STORAGE_ADVICE = {
    _errno.ENOSPC: "the disk is full: free space there and rerun the same command",
    _errno.EDQUOT: "the disk quota is used up: free space there and rerun the same command",
    _errno.EROFS: "the file system is read-only: choose another --out (or mount it writable) and rerun",
    _errno.EACCES: "permission denied: choose another --out, or make the directory writable, and rerun",
    _errno.EPERM: "permission denied: choose another --out, or make the directory writable, and rerun",
    _errno.ENOTDIR: "a part of this path is a file, not a directory: point --out at a directory",
    _errno.EEXIST: "a file is in the way of a directory there: point --out at a directory",
    _errno.EISDIR: "a directory is in the way of a file there: move it or choose another --out",
}
STORAGE_ERRNOS = frozenset(_STORAGE_ADVICE)


class StorageError(UserError):
    """A file localbench must write could not be written (disk full, read-only, not a directory).
    The message names the path and what to do; nothing already written is lost."""

    exit_code = EXIT_CANNOT_WRITE

    @classmethod
    def from_os_error(cls, e: OSError, path: object = None) -> "StorageError":
        where = path if path is not None else (e.filename or "a file")
        advice = _STORAGE_ADVICE.get(e.errno or 0, "fix it and rerun the same command")
        return cls(f"cannot write {where}: {e.strerror or e} ({advice}; everything already written is kept, "
                   "and the rerun resumes from it)")


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


def field_errors(e, prefix: str = "") -> list[str]:
    """Every error of a pydantic ValidationError as "field 'a.b': message", one line each;
    ``prefix`` names where the validated part sits ("spec." for spec.yaml's spec section)."""
    return [f"field '{prefix + '.'.join(str(x) for x in err['loc']) or '(top level)'}': "
            f"{str(err['msg']).removeprefix('Value error, ')}" for err in e.errors()]


def field_error(e, prefix: str = "") -> str:
    """The first of ``field_errors`` (one line)."""
    return field_errors(e, prefix)[0]


def yaml_error(e) -> str:
    """A YAML parse error as one line: what is wrong and where (line, column), without the
    multi-line excerpt PyYAML prints."""
    mark = getattr(e, "problem_mark", None)
    what = getattr(e, "problem", None) or str(e).splitlines()[0]
    return f"{what} (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else what


def path_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be used as one file or directory name (a run id, a scenario id), or None.

    Refused: empty, '.' or '..', a path separator ('/' or '\\'), or a control character (NUL,
    newline...): any of these would write outside the directory meant, or not at all.
    """
    if not name:
        return "must not be empty"
    if name in (".", ".."):
        return f"{name!r} is not a name (it is a path step)"
    bad = sorted({c for c in name if c in "/\\" or ord(c) < 32 or ord(c) == 127})
    if bad:
        return f"{name!r} contains {''.join(repr(c)[1:-1] for c in bad)!r}; use a plain name without path separators"
    return None
