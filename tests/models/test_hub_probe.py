"""Is a model id on the hub? One HEAD request through huggingface_hub's session, at the configured endpoint
(HF_ENDPOINT), never when offline. A local HTTP server stands in for the hub: no test reaches the network."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from huggingface_hub import constants

from flashtrace.engine.models.loading import _hub_reachable


class _Hub(BaseHTTPRequestHandler):
    seen: list = []
    status = 200

    def do_HEAD(self):  # noqa: N802 - the name http.server calls
        self.seen.append(("HEAD", self.path))
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def hub(monkeypatch):
    """A local endpoint, configured the way HF_ENDPOINT configures huggingface_hub at import."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    _Hub.seen, _Hub.status = [], 200
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_probe_asks_the_configured_endpoint_for_the_models_config(hub):
    assert _hub_reachable("some-org/some-model")
    assert _Hub.seen == [("HEAD", "/some-org/some-model/resolve/main/config.json")]


def test_any_answer_counts_as_reachable_and_loading_says_what_is_wrong(hub):
    _Hub.status = 404
    assert _hub_reachable("some-org/missing-model")
    assert len(_Hub.seen) == 1


def test_no_answer_is_unreachable(hub):
    hub.shutdown()
    hub.server_close()  # the port now refuses connections
    assert not _hub_reachable("some-org/some-model")


@pytest.mark.parametrize("how", ["environment", "import"])
def test_offline_sends_nothing(hub, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert not _hub_reachable("some-org/some-model")
    assert _Hub.seen == []


def test_a_missing_local_path_is_not_probed(hub):
    assert not _hub_reachable("./no/such/folder")
    assert _Hub.seen == []
