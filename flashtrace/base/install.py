"""What is installed: the package's version (from its metadata) and how to add an optional extra."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "flashtrace-studio"


def version() -> str:
    """The installed version of flashtrace-studio ("0+unknown" when run from a checkout never installed).

    Returns:
        The version string from the package's metadata, or "0+unknown".
    """
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def extra_hint(extra: str) -> str:
    """The command that adds an optional extra (``app``, ``eval``, ``ray``): the wheel installed again with
    ``[extra]`` (the package is not on PyPI; README, Install).

    Args:
        extra: The extra's name, such as ``app``, ``eval`` or ``ray``.

    Returns:
        One line telling how to install the wheel again with `extra`, to append to an error message.
    """
    wheel = f"flashtrace_studio-{version()}-py3-none-any.whl"
    return f"install the wheel again with the {extra} extra: pip install '{wheel}[{extra}]' (README, Install)"


__all__ = ["version", "extra_hint", "DISTRIBUTION"]
