"""Errors a user can cause or fix. The CLI turns them into one line and an exit code."""

import errno
from pathlib import Path


class AdaptError(Exception):
    """A failure the user can act on; exit code 1. The message names the problem and the fix."""

    exit_code = 1


class UsageError(AdaptError):
    """Bad input on the command line or in a file the user named; exit code 2."""

    exit_code = 2


class EngineStartError(AdaptError):
    """The engine died or never became ready during start-up (engines/server.py raises it; here, below every room
    that waits on an engine, rundir.py among them).

    `.cause` is the log's root-cause line (or what happened, when the log names none);
    str() is one line: what happened, the cause, and where the full log is.
    """

    def __init__(self, summary: str, cause: str | None, log_path: Path):
        self.summary = summary
        self.cause = cause or summary
        self.log_path = Path(log_path)
        super().__init__(f"{summary}: {cause} (full log: {log_path})" if cause else f"{summary} (full log: {log_path})")


# A directory that refuses writes (read-only, not ours, not a directory) is the user's to change: exit 2.
# Any other failure (a full disk) is the machine's: exit 1. Either is one line, never a traceback.
REFUSED_WRITES = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EEXIST, errno.EISDIR)


def cannot_write(where: object, exc: OSError) -> AdaptError:
    """One line for results that cannot be written at `where` (a directory, or a file in it)."""
    error = UsageError if exc.errno in REFUSED_WRITES else AdaptError
    return error(f"{where}: cannot write results there ({exc.strerror or exc}); choose another --out")
