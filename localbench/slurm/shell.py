"""Values that may go into a rendered sbatch script, and only in a form a shell cannot misread.

The template environment refuses any interpolated value that is not a ``Shell`` (a string made
safe by one of the functions here) or an int, so a template that forgets to quote something fails
to render instead of producing an injectable script.
"""

from __future__ import annotations

import re
import shlex

# What may appear in an #SBATCH value. sbatch splits these lines on whitespace and handles quotes
# its own way, and a newline would end the comment and start a line bash runs, so anything outside
# this set is refused rather than quoted.
SBATCH_SAFE = re.compile(r"^[A-Za-z0-9_.,:@%+=/\[\]&|!*-]+$")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class Shell(str):
    """A string that is already safe to paste into a bash script where it is used."""


class UnsafeValue(ValueError):
    """A value that cannot be placed in a script safely; the message names the field."""


def quote(value: object) -> Shell:
    """One shell word whose value is exactly ``str(value)``: nothing in it is expanded."""
    return Shell(shlex.quote(str(value)))


def quote_with_vars(value: str) -> Shell:
    """One shell word in which only ``$NAME`` / ``${NAME}`` expand (e.g. ``$SCRATCH/hf``).

    Everything else, including ``$(...)``, backticks, quotes and ``;``, stays literal: the literal
    pieces are single-quoted and each variable is emitted as ``"${NAME}"``.
    """
    parts: list[str] = []
    pos = 0
    for m in _VAR.finditer(value):
        if m.start() > pos:
            parts.append(shlex.quote(value[pos:m.start()]))
        parts.append('"${%s}"' % (m.group(1) or m.group(2)))
        pos = m.end()
    if pos < len(value) or not parts:
        parts.append(shlex.quote(value[pos:]))
    return Shell("".join(parts))


def sbatch_value(value: object, field: str) -> Shell:
    """A value for an ``#SBATCH --opt=VALUE`` line, refused unless it is plainly safe."""
    s = str(value)
    if not SBATCH_SAFE.match(s):
        bad = sorted({c for c in s if not SBATCH_SAFE.match(c)})
        raise UnsafeValue(
            f"{field}: {s!r} cannot go on an #SBATCH line (it contains {''.join(bad)!r}); "
            "use only letters, digits and _ . , : @ % + = / [ ] & | ! * -"
        )
    return Shell(s)


def shell_line(value: str, field: str) -> Shell:
    """A line of the user's own shell code (setup, post-merge commands): one line, used as written."""
    if "\n" in value or "\r" in value or "\0" in value:
        raise UnsafeValue(f"{field}: {value!r} must be a single line (no newline or NUL characters)")
    return Shell(value)


def no_newline(value: str, field: str) -> str:
    """Values that stay literal in the script may hold anything but a line break or NUL."""
    if "\n" in value or "\r" in value or "\0" in value:
        raise UnsafeValue(f"{field}: {value!r} must not contain a newline or NUL character")
    return value


def finalize(value: object) -> object:
    """Jinja finalize hook: only Shell strings and ints may be interpolated into a script."""
    if isinstance(value, Shell):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UnsafeValue(
        f"template interpolated an unquoted value {value!r}; pass it through |q, |qv or |sb"
    )
