"""``flashtrace app``: open the Streamlit app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HELP = "open the FlashTrace Studio app in the browser (Streamlit)"


def add_arguments(parser) -> None:
    parser.add_argument("--port", type=int, default=8501, help="port to serve on")
    parser.add_argument("--address", default="localhost", help="address to bind")
    parser.add_argument("--headless", action="store_true", help="do not open a browser window")


def run(args) -> int:
    app = Path(__file__).resolve().parents[2] / "app.py"
    if not app.is_file():
        raise RuntimeError(f"app.py not found next to the package ({app}); run from a source checkout")
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port),
           "--server.address", args.address, "--browser.gatherUsageStats", "false",
           "--client.showSidebarNavigation", "false", "--server.fileWatcherType", "none",
           "--server.headless", "true" if args.headless else "false"]
    return subprocess.call(cmd)
