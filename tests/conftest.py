import functools
import os

import pytest
import torch
from filelock import FileLock
from hypothesis import Phase, settings

# one thread per pytest-xdist worker (the workers share the cores); up to two in a single process
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
torch.set_num_threads(max(1, min(2, (os.cpu_count() or 1) // WORKERS)))

# under `make mutation` a failing property test is a killed mutant: no time goes to shrinking the example
settings.register_profile("mutation", phases=[Phase.explicit, Phase.reuse, Phase.generate])
if os.environ.get("FLASHTRACE_MUTATION"):
    settings.load_profile("mutation")

TINY_MODELS = ["tiny-llama", "tiny-mistral", "tiny-qwen2", "tiny-qwen3", "tiny-gemma2", "tiny-gemma3",
               "tiny-phi3", "tiny-gpt2"]


def save_tiny_llama(folder, dtype: torch.dtype = torch.float32):
    """A model folder as from_pretrained reads one: the tiny llama (seed 0, saved for SDPA attention) in `dtype`
    with the built-in tokenizer, written to `folder`. Returns the model."""
    from flashtrace.engine.models.aliases import TINY_ALIASES
    from flashtrace.engine.models.loading import default_tokenizer
    from flashtrace.engine.models.tiny import build_tiny_model

    tokenizer = default_tokenizer()
    model = build_tiny_model(TINY_ALIASES["tiny-llama"], tokenizer, seed=0, attn_implementation="sdpa").to(dtype)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model


@functools.lru_cache(maxsize=None)
def _load(name: str):
    from flashtrace.engine.models import load_model

    return load_model(name)


@pytest.fixture(params=TINY_MODELS)
def tiny(request):
    """Each tiny random-weight family model (cached for the session)."""
    return _load(request.param)


@pytest.fixture
def tiny_llama():
    return _load("tiny-llama")


@pytest.fixture(scope="session")
def smollm():
    return _load("smollm2-135m")


def record_calls(monkeypatch, owner, name: str) -> list[dict]:
    """Wrap ``owner.name`` so that every call's keyword arguments are recorded, then passed through."""
    seen, real = [], getattr(owner, name)

    def spy(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen


def random_ids(n: int, seed: int = 0, vocab: int = 2000) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n,), generator=g)


@pytest.fixture(scope="session")
def ray_lock(tmp_path_factory) -> FileLock:
    """One Ray cluster at a time across the pytest-xdist workers: a lock file in the folder the workers' temporary
    folders share (pytest's own base folder in a single process). Two local clusters starting at once beside CPU-bound
    work stalled for minutes; xdist's `xdist_group` would keep them on one worker but does not take effect with
    pytest 9.2 (its node-id suffix is never read). Reentrant: a test may hold it inside a fixture that holds it."""
    return FileLock(str(tmp_path_factory.getbasetemp().parent / "flashtrace-ray.lock"))


@pytest.fixture(autouse=True)
def _one_ray_cluster_at_a_time(request):
    """Every test marked `ray` runs holding `ray_lock`; other tests never wait for it."""
    if request.node.get_closest_marker("ray") is None:
        yield
        return
    with request.getfixturevalue("ray_lock"):
        yield
