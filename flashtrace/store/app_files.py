"""Where the Streamlit app's files are: the top level of a source checkout (``app.py``, ``pages/``,
``.streamlit/``, ``assets/gallery/``), or the copy of them a wheel carries in ``flashtrace/_app/``
(made by ``setup.py`` when the wheel is built), so installing the built wheel then
``flashtrace app`` works outside a checkout."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
READ_ONLY_ENV = "FLASHTRACE_READ_ONLY"  # set by `flashtrace app --read-only`: the app only browses and exports
CHECKOUT = PACKAGE.parent
BUNDLED = PACKAGE / "_app"


def app_root() -> Path:
    """The folder holding ``app.py`` and ``pages/``: the checkout when there is one, else the wheel's copy.

    Returns:
        The checkout's top level when it holds ``app.py`` and ``pages/``, else the wheel's ``flashtrace/_app``.

    Raises:
        FileNotFoundError: When neither the checkout nor the wheel's copy holds ``app.py`` and ``pages/``.
    """
    for root in (CHECKOUT, BUNDLED):
        if (root / "app.py").is_file() and (root / "pages").is_dir():
            return root
    raise FileNotFoundError(f"the app's files are missing: neither {CHECKOUT} nor {BUNDLED} holds app.py and "
                            "pages/; reinstall flashtrace-studio")


def bundled_gallery() -> Path:
    """The shipped gallery: the checkout's ``assets/gallery`` or the wheel's copy.

    Returns:
        The first of the two that is a folder; the checkout's path when neither is.
    """
    for root in (CHECKOUT, BUNDLED):
        folder = root / "assets" / "gallery"
        if folder.is_dir():
            return folder
    return CHECKOUT / "assets" / "gallery"
