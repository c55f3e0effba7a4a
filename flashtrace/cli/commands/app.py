"""``flashtrace app``: open the Streamlit app."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import TYPE_CHECKING

from ...base.errors import MissingDependencyError

if TYPE_CHECKING:
    import argparse

HELP = "open the FlashTrace Studio app in the browser (Streamlit)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `flashtrace app` (port, address, headless, read-only) to `parser`.

    Args:
        parser: The `app` subcommand's parser; the options are added to it in place.
    """
    parser.add_argument("--port", type=int, default=8501, help="port to serve on")
    parser.add_argument("--address", default="localhost", help="address to bind")
    parser.add_argument("--headless", action="store_true", help="do not open a browser window")
    parser.add_argument("--read-only", action="store_true",
                        help="a read-only demo for sharing: browse the gallery and the library and export, but no "
                             "model runs and no import, rename, delete or save (the controls are not shown, and "
                             "the server refuses them); also set by FLASHTRACE_READ_ONLY=1 or by 'read_only = true' "
                             "under [flashtrace] in .streamlit/secrets.toml")


def run(args: argparse.Namespace) -> int:
    """Serve the Streamlit app (refused without the app extra); returns the server's exit code.

    The process becomes the Streamlit server (`os.execv`), so signals such as Ctrl-C reach Streamlit itself.

    Args:
        args: The parsed options of `flashtrace app` (port, address, headless, read_only).

    Returns:
        The server's exit code (the process is replaced by the server, which exits with it).

    Raises:
        MissingDependencyError: When Streamlit (the app extra) is not installed.
        FileNotFoundError: When the app's files (``app.py`` and ``pages/``) are missing.
    """
    from ...base.install import extra_hint
    from ...store.app_files import READ_ONLY_ENV, app_root

    if importlib.util.find_spec("streamlit") is None:
        raise MissingDependencyError(f"the app needs Streamlit; {extra_hint('app')}")
    root = app_root()
    if args.read_only:
        os.environ[READ_ONLY_ENV] = "1"  # the server (exec'd below) inherits it
    cmd = [sys.executable, "-m", "streamlit", "run", str(root / "app.py"), "--server.port", str(args.port),
           "--server.address", args.address, "--browser.gatherUsageStats", "false",
           "--client.showSidebarNavigation", "false", "--client.toolbarMode", "viewer",
           "--server.fileWatcherType", "none",
           "--server.headless", "true" if args.headless else "false"]
    os.chdir(root)  # the app's .streamlit/config.toml is read from there
    os.execv(sys.executable, cmd)  # become the server: signals (Ctrl-C, terminate) reach Streamlit itself
