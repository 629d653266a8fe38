"""Errors a user can cause or fix. The CLI turns them into one line and an exit code."""


class AdaptError(Exception):
    """A failure the user can act on; exit code 1. The message names the problem and the fix."""

    exit_code = 1


class UsageError(AdaptError):
    """Bad input on the command line or in a file the user named; exit code 2."""

    exit_code = 2
