"""The load-time decomposition check (issue 18 item 6): every supported family passes it; a spec that
no longer reproduces the attention output is refused when the model loads, unless verify=False."""

import pytest

from flashtrace.engine.models import UnsupportedModelError, load_model
from flashtrace.engine.models.recording import LayerRecord
from flashtrace.engine.models.verify import decomposition_errors, verify_decomposition


def test_every_family_passes(tiny):
    errors = decomposition_errors(tiny)
    assert len(errors) == tiny.info()["n_layers"] and max(errors) < 1e-5
    assert verify_decomposition(tiny) == max(errors)


def test_a_wrong_decomposition_is_refused_at_load_time(monkeypatch):
    values = LayerRecord.head_values
    monkeypatch.setattr(LayerRecord, "head_values", lambda self, src: values(self, src) * 1.05)  # a 5 % wrong W_O
    with pytest.raises(UnsupportedModelError, match="does not reproduce layer 0"):
        load_model("tiny-qwen3")
    assert load_model("tiny-qwen3", verify=False).spec.name == "qwen3"  # skippable for speed-critical use
