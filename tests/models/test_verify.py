"""The load-time decomposition check (issue 18 item 6): every supported family passes it; a spec that
no longer reproduces the attention output is refused when the model loads, unless verify=False."""

import pytest
import torch

from flashtrace.engine.models import UnsupportedModelError, load_model
from flashtrace.engine.models.recording import LayerRecord
from flashtrace.engine.models.verify import HALF_TOLERANCE, decomposition_errors, verify_decomposition


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


def test_the_refusal_names_the_model_the_layer_the_error_and_the_way_out(monkeypatch):
    values = LayerRecord.head_values
    monkeypatch.setattr(LayerRecord, "head_values", lambda self, src: values(self, src) * 1.05)
    with pytest.raises(UnsupportedModelError) as raised:
        load_model("tiny-qwen3")
    text = str(raised.value)
    assert text.startswith("tiny-qwen3 (qwen3): the attention decomposition does not reproduce layer 0's output "
                           "(relative error 0.05 > 0.001); its attributions would be wrong.")
    assert text.endswith(" This model variant is not supported (load with verify=False only to investigate)")


def test_half_precision_models_are_checked_against_the_coarse_tolerance():
    loaded = load_model("tiny-llama", dtype=torch.bfloat16)  # verified while loading: passes, not a TypeError
    worst = verify_decomposition(loaded)
    assert 1e-4 < worst <= HALF_TOLERANCE  # bfloat16 rounding shows, far below what a wrong spec gives


def test_the_number_of_check_tokens_is_the_one_asked_for(tiny_llama):
    few = decomposition_errors(tiny_llama, n_tokens=4)
    assert verify_decomposition(tiny_llama, n_tokens=4) == max(few) != max(decomposition_errors(tiny_llama))


class _Layer:
    """A recorded layer with chosen numbers: one head, two tokens, a known residual stream in bfloat16."""

    def __init__(self):
        self.x_prev = torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=torch.bfloat16)  # norm 5
        self.x_mid = torch.tensor([[3.0, 4.0], [0.0, 12.0]], dtype=torch.bfloat16)  # norm 13
        self.b_o, self.post_scale = None, None

    def head_values(self, src):
        return torch.tensor([[[0.0, 0.0], [0.0, 12.5]]])[:, src]  # token 1 writes 0.5 too much

    def attention_output(self):
        return (self.x_mid.float() - self.x_prev.float())  # [[0, 0], [0, 12]]


def test_the_error_is_relative_to_how_well_the_layer_output_is_known(monkeypatch):
    import flashtrace.engine.models.verify as verify

    class Loaded:
        @staticmethod
        def tokenizer(text, add_special_tokens):
            assert text == verify.CHECK_TEXT and add_special_tokens is False
            return {"input_ids": [5, 6, 7]}

    monkeypatch.setattr(verify, "record_forward", lambda loaded, ids, keep_mid: type("R", (), {"layers": [_Layer()]}))
    monkeypatch.setattr(verify, "attention_rows", lambda layer, rows: iter([(rows, torch.eye(2)[None])]))
    # ‖recon − actual‖ = 0.5; ‖actual‖ = 12; bfloat16's eps = 2⁻⁷, times ‖x_mid‖ + ‖x_prev‖ = 18
    expected = 0.5 / (12 + 2 ** -7 * 18)
    assert decomposition_errors(Loaded(), n_tokens=2) == [pytest.approx(expected, rel=1e-9)]
