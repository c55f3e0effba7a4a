"""`in_use` on model objects that are not transformers models, or are only partly: a module without a config,
a config without an attention implementation, modules added during a use, and no needless switching."""

import torch
from torch import nn

from flashtrace.engine.models.borrow import in_use


class Switchable(nn.Module):
    """A model whose attention implementation is recorded each time it is set."""

    def __init__(self, attention):
        super().__init__()
        self.layer = nn.Linear(2, 2)
        self.config = type("Config", (), {})()
        if attention is not None:
            self.config._attn_implementation = attention
        self.calls = []

    def set_attn_implementation(self, name):
        self.calls.append(name)
        self.config._attn_implementation = name


def test_a_module_without_a_config_is_put_in_eval_mode_and_back():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).train()
    with in_use(model) as used:
        assert used is model and not any(m.training for m in model.modules())
    assert all(m.training for m in model.modules())


def test_a_config_without_an_attention_implementation_is_set_and_not_restored_to_nothing():
    model = Switchable(None)
    with in_use(model, attention="sdpa"):
        assert model.config._attn_implementation == "sdpa"
    assert model.calls == ["sdpa"]  # nothing was there to put back


def test_an_attention_already_in_place_is_not_switched_and_a_switched_one_is_put_back():
    model = Switchable("ft_record")
    with in_use(model, attention="ft_record"):
        pass
    assert model.calls == []
    with in_use(model, attention="eager"):
        assert model.config._attn_implementation == "eager"
    assert model.calls == ["eager", "ft_record"]


def test_a_module_added_during_the_use_keeps_its_own_training_flag():
    model = Switchable("sdpa")
    with in_use(model):
        model.extra = nn.Dropout(0.1).train()
        model.frozen = nn.Dropout(0.1).eval()
    assert model.extra.training is True and model.frozen.training is False
    assert model.layer.training is True and torch.is_grad_enabled()
