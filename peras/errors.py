"""Errors a user can cause end as one line and an exit code, never a traceback."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A user's file can hold a 60 MB token: messages quote the start of a value and say how long it is.
MAX_VALUE_CHARS = 80
# And no message, whatever it quotes, is longer than this (cli/main.py caps what it prints).
MAX_MESSAGE_CHARS = 2000


# A server's error body may quote the caller's credentials (LiteLLM: "Received API Key = sk-..."): the values of
# these fields are masked, and so is every key this process was given (remember_secret), wherever they appear.
SECRET_FIELDS = re.compile(
    r"""(?P<name>\b(?:proxy-)?authorization\b|\b(?:x-)?api[-_ ]?key\b)"""
    r"""(?P<sep>["']?\s*[:=]\s*["']?(?:bearer\s+|basic\s+)?)(?P<value>[^\s"',;}{\]\[]{4,})""",
    re.IGNORECASE,
)
# A URL's userinfo is a credential wherever it is quoted (a resume line, a server's error): `user:password@` keeps the
# user name and masks the password, a lone `token@` is masked whole (up to the host's last `@`, before any path).
USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?:(?P<user>[^\s/?#@:]*):)?[^\s/?#]+@", re.IGNORECASE)
MASK = "***"
SECRETS: set[str] = set()  # the API keys this process was given (peras/llm/client.py remembers them)


def remember_secret(value: str | None) -> None:
    """Mask `value` in every message from now on (keys shorter than 4 characters would mask ordinary words)."""
    if value and len(value) >= 4:
        SECRETS.add(value)


def mask_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every remembered or given secret, any Authorization / api-key / Bearer value and any URL's
    password (or lone user name: USERINFO) masked."""
    for secret in sorted({*SECRETS, *secrets}, key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, MASK)
    if "@" in text:
        text = USERINFO.sub(_masked_userinfo, text)
    return SECRET_FIELDS.sub(lambda m: m["name"] + m["sep"] + MASK, text)


def _masked_userinfo(found: re.Match[str]) -> str:
    user = found["user"]
    return found["scheme"] + (f"{user}:" if user is not None else "") + MASK + "@"


def clip(value: object, limit: int = MAX_VALUE_CHARS, quote: bool = False) -> str:
    """`value` for an error message: whole when short, else its first `limit` characters and its length."""
    text = str(value)
    shown = text[:limit]
    shown = repr(shown) if quote else shown
    return shown if len(text) <= limit else f"{shown}... ({len(text):,} characters)"


def one_line(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`message` as one line of at most about `limit` characters (what is cut is counted)."""
    text = " ".join(line.strip() for line in message.splitlines() if line.strip())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


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

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id  # the stored request row of the refusal, when the engine journaled one


class BudgetReached(BackendError):
    """The run's --request-budget is spent: nothing more is sent; the run stops, resumable with a larger budget."""
