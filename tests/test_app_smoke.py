from pathlib import Path

from streamlit.testing.v1 import AppTest


def test_home_page_renders():
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py")).run(timeout=30)
    assert not at.exception
    assert at.title[0].value == "FlashTrace Studio"
