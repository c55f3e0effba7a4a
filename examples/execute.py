"""Run examples/quickstart.ipynb top to bottom and save it with its outputs (what is committed).

    .venv/bin/python examples/execute.py            # the built-in SmolLM2 model
    FLASHTRACE_NOTEBOOK_MODEL=tiny-llama .venv/bin/python examples/execute.py --out /tmp/q.ipynb

tests/test_notebook.py runs the same notebook on a tiny model and checks its outputs.
"""

import argparse
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def execute(path: Path, workdir: Path, timeout: int = 600):
    """The notebook at `path`, executed in a fresh python3 kernel whose working folder is `workdir`."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=HERE / "quickstart.ipynb")
    parser.add_argument("--out", type=Path, default=None, help="where to save it (default: in place)")
    args = parser.parse_args()
    nb = execute(args.notebook, HERE)
    nbformat.write(nb, args.out or args.notebook)


if __name__ == "__main__":
    main()
