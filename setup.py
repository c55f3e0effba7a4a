"""Packaging hook (everything else is in pyproject.toml): a built wheel carries the Streamlit app's
top-level files (app.py, pages/, .streamlit/config.toml) and the gallery (assets/gallery/) inside the
package as ``flashtrace/_app/``, so ``flashtrace app`` works from a plain ``pip install``. In the
checkout they stay where they are; an editable install reads them there."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
APP_FILES = ["app.py", ".streamlit/config.toml", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("pages/*.py")),
             *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("assets/gallery/*.json"))]


class BuildWithApp(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "flashtrace" / "_app"
        for name in APP_FILES:
            dest = target / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, dest)


setup(cmdclass={"build_py": BuildWithApp})
