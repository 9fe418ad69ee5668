"""Errors a user can cause end as one line and an exit code, never a traceback."""

from __future__ import annotations


class PerasError(Exception):
    """Base class: the message is what the user reads."""

    exit_code = 1


class UsageError(PerasError):
    """A bad flag, an unknown preset, a missing file: the user must change the call (exit 2)."""

    exit_code = 2


class InputError(PerasError):
    """A file that cannot be read as what it claims to be (exit 1); carries file and line."""

    exit_code = 1

    def __init__(self, message: str, path: object | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")
        self.path = path
        self.line = line


class CheckFailed(PerasError):
    """A quality gate failed: nothing was published (exit 1)."""

    exit_code = 1


class BackendError(PerasError):
    """An LLM endpoint could not be used (unreachable, refused, out of budget) (exit 1)."""

    exit_code = 1


class RequestRejected(BackendError):
    """The endpoint refused this one request (HTTP 4xx other than 408/409/429): record it, go on."""
