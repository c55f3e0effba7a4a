"""Where the app's files are found (flashtrace.store.app_files): a source checkout first, else the wheel's copy."""

import pytest

from flashtrace.store import app_files


def _app(root):
    (root / "pages").mkdir(parents=True)
    (root / "app.py").write_text("")
    return root


@pytest.fixture
def places(tmp_path, monkeypatch):
    checkout, bundled = tmp_path / "checkout", tmp_path / "bundled"
    checkout.mkdir()
    bundled.mkdir()
    monkeypatch.setattr(app_files, "CHECKOUT", checkout)
    monkeypatch.setattr(app_files, "BUNDLED", bundled)
    return checkout, bundled


def test_the_checkout_holds_the_app_in_this_repository():
    assert (app_files.app_root() / "app.py").is_file()
    assert app_files.bundled_gallery() == app_files.CHECKOUT / "assets" / "gallery"


def test_a_checkout_with_the_app_wins_over_the_wheel_copy(places):
    checkout, bundled = map(_app, places)
    assert app_files.app_root() == checkout


def test_without_a_checkout_the_wheel_copy_serves_the_app(places):
    checkout, bundled = places
    _app(bundled)
    (checkout / "app.py").write_text("")  # app.py alone (no pages/) is not the app
    assert app_files.app_root() == bundled


def test_a_checkout_with_pages_but_no_app_py_is_not_the_app(places):
    checkout, bundled = places
    (checkout / "pages").mkdir()
    _app(bundled)
    assert app_files.app_root() == bundled


def test_no_app_anywhere_is_refused_naming_both_places(places):
    checkout, bundled = places
    with pytest.raises(FileNotFoundError) as caught:
        app_files.app_root()
    assert str(checkout) in str(caught.value) and str(bundled) in str(caught.value)
    assert str(caught.value).endswith("holds app.py and pages/; reinstall flashtrace-studio")


def test_the_gallery_comes_from_the_first_place_that_has_one(places):
    checkout, bundled = places
    assert app_files.bundled_gallery() == checkout / "assets" / "gallery"  # none anywhere: the checkout's path
    (bundled / "assets" / "gallery").mkdir(parents=True)
    assert app_files.bundled_gallery() == bundled / "assets" / "gallery"
    (checkout / "assets" / "gallery").mkdir(parents=True)
    assert app_files.bundled_gallery() == checkout / "assets" / "gallery"
