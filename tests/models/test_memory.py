"""What the memory checks refuse and how they count: the smallest room of the system, the address-space limit and
the container; a model's parameters from its config; weights refused before loading with what would fit; devices
this machine lacks refused in one line."""

from pathlib import Path

import pytest
import torch
from transformers import Gemma3TextConfig, GPT2Config, LlamaConfig

from flashtrace.engine.models import memory
from flashtrace.engine.models.memory import ResourceError

GiB = 2**30


@pytest.fixture
def cgroup(tmp_path, monkeypatch):
    """A container whose cgroup files are written by the test (`cgroup(limit, current)`)."""
    real = Path

    def fake(path):
        return real(tmp_path / real(path).name) if str(path).startswith("/sys/fs/cgroup/") else real(path)

    monkeypatch.setattr(memory, "Path", fake)

    def write(limit, current):
        (tmp_path / "memory.max").write_text(f"{limit}\n")
        (tmp_path / "memory.current").write_text(f"{current}\n")
    return write


def test_the_container_limit_counts_what_it_still_allows(cgroup):
    cgroup(8 * GiB, 3 * GiB)
    assert memory._cgroup_room() == 5 * GiB
    cgroup(2 * GiB, 3 * GiB)  # over its limit: no room, not a negative one
    assert memory._cgroup_room() == 0
    cgroup("max", 3 * GiB)
    assert memory._cgroup_room() is None  # no limit set


def test_the_available_memory_is_the_smallest_room(cgroup, monkeypatch):
    import types

    import psutil

    free = {"bytes": 10 * GiB}
    monkeypatch.setattr(psutil, "virtual_memory", lambda: types.SimpleNamespace(available=free["bytes"]))
    monkeypatch.setattr(memory, "_rlimit_room", lambda: None)
    cgroup(4 * GiB, 1 * GiB)
    assert memory.available_bytes() == 3 * GiB  # the container's limit
    cgroup("max", 0)
    assert memory.available_bytes("cpu") == 10 * GiB  # the system's
    monkeypatch.setattr(memory, "_rlimit_room", lambda: 12345)
    assert memory.available_bytes() == 12345  # the address-space limit's
    free["bytes"] = 5000
    assert memory.available_bytes() == 5000


def test_the_address_space_limit_counts_what_the_process_has_mapped():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY or hard != resource.RLIM_INFINITY:
        pytest.skip("the process already runs under an address-space limit")
    assert memory._rlimit_room() is None  # no limit: no room to count
    mapped = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + 64 * GiB, hard))
    try:
        room = memory._rlimit_room()
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert 63 * GiB < room <= 64 * GiB


def test_parameters_are_counted_from_the_config_as_the_built_model_has_them():
    for config in (LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=5, num_attention_heads=4,
                               num_key_value_heads=2, vocab_size=300),
                   GPT2Config(n_embd=32, n_layer=4, n_head=2, vocab_size=200, n_positions=64),
                   Gemma3TextConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=7, num_attention_heads=2,
                                    num_key_value_heads=1, head_dim=16, vocab_size=100, sliding_window_pattern=3)):
        with torch.device("meta"):
            from transformers import AutoModelForCausalLM

            built = AutoModelForCausalLM.from_config(config)
        assert memory.count_parameters(config) == sum(p.numel() for p in built.parameters()), type(config)


def test_a_config_cut_to_fewer_layers_keeps_its_per_layer_lists_in_step():
    config = Gemma3TextConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=7, num_attention_heads=2,
                              num_key_value_heads=1, head_dim=16, vocab_size=100)
    cut = memory._with_layers(config, 2)
    assert cut.num_hidden_layers == 2 and cut.layer_types == config.layer_types[:2]
    assert config.num_hidden_layers == 7 and len(config.layer_types) == 7  # the original is untouched


def test_weights_that_do_not_fit_are_refused_naming_size_dtype_and_room(monkeypatch):
    config = LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                         vocab_size=300)
    n = memory.count_parameters(config)
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: int(n * 4 * 1.1 / 0.9) + 100)
    assert memory.check_weights_fit("m", config, torch.float32) == n * 4  # fits with 10 % to spare
    assert memory.check_weights_fit("m", config, torch.bfloat16) == n * 2
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: int(n * 4 / 0.9))  # no 10 % margin left
    with pytest.raises(ResourceError) as refused:
        memory.check_weights_fit("m", config, torch.float32)
    room = int(n * 4 / 0.9) * 0.9 / GiB
    assert str(refused.value) == (f"m needs ~{n * 4 / GiB:.1f} GiB for its weights ({n / 1e9:.2f} B parameters in "
                                  f"float32) but ~{room:.1f} GiB is available; refused before loading: choose a "
                                  "smaller model or dtype (bfloat16 halves it)")
    assert refused.value.exit_code == 3
    with pytest.raises(ResourceError, match=r"in bfloat16\) but .* available; refused .* or dtype$"):
        memory.check_weights_fit("m", config, torch.bfloat16, margin=2.5)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ResourceError, match="is available on the device;"):
        memory.check_weights_fit("m", config, torch.bfloat16, device="cuda", margin=2.5)


def test_value_sizes():
    assert [memory.dtype_bytes(d) for d in (torch.float32, torch.bfloat16, torch.float16, torch.int64)] == [4, 2, 2, 8]


@pytest.mark.parametrize("device, message", [
    ("gpu", "unknown device 'gpu'; use cpu, cuda or cuda:N"),
    ("meta", "device type 'meta' is not supported; use cpu or cuda"),
])
def test_devices_torch_or_flashtrace_cannot_use_are_refused_in_one_line(device, message):
    with pytest.raises(ValueError) as refused:
        memory.check_device(device)
    assert str(refused.value) == message


def test_cuda_devices_are_checked_against_what_is_visible(monkeypatch):
    memory.check_device(None)
    memory.check_device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    memory.check_device("cuda:1")
    memory.check_device("cuda")
    with pytest.raises(ValueError, match=r"^device 'cuda:2' does not exist: 2 CUDA device\(s\) visible$"):
        memory.check_device("cuda:2")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for cuda, why in ((None, "this torch build has no CUDA support"), ("12.4", "no CUDA device is visible")):
        monkeypatch.setattr(torch.version, "cuda", cuda)
        with pytest.raises(ValueError) as refused:
            memory.check_device("cuda:0")
        assert str(refused.value) == f"device 'cuda:0' is not available: {why} (torch {torch.__version__}); use --device cpu"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^device 'mps' is not available on this machine; use --device cpu$"):
        memory.check_device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    memory.check_device("mps")  # an Apple GPU where there is one


def test_a_process_past_its_address_space_limit_has_no_room(monkeypatch):
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda which: (4096, resource.RLIM_INFINITY))  # under what is mapped
    assert memory._rlimit_room() == 0


def test_a_cuda_device_is_sized_by_its_own_free_memory(monkeypatch):
    import types

    import psutil

    monkeypatch.setattr(psutil, "virtual_memory", lambda: types.SimpleNamespace(available=10 * GiB))
    monkeypatch.setattr(memory, "_rlimit_room", lambda: None)
    monkeypatch.setattr(memory, "_cgroup_room", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev: {torch.device("cuda:1"): (5 * GiB, 80 * GiB)}[dev])
    assert memory.available_bytes("cuda:1") == 5 * GiB
    assert memory.available_bytes("cpu") == memory.available_bytes() == 10 * GiB  # a GPU does not size the CPU


def test_weights_are_checked_against_the_device_they_go_to_up_to_the_exact_room(monkeypatch):
    config = LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                         vocab_size=300)
    need = memory.count_parameters(config) * 4
    rooms = {"cpu": 100 * need, "cuda": need}
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: rooms["cpu" if device is None else device])
    assert memory.check_weights_fit("m", config, torch.float32, device="cpu") == need
    with pytest.raises(ResourceError, match="available on the device"):
        memory.check_weights_fit("m", config, torch.float32, device="cuda")
    exact = next(v for v in range(int(need / 0.9) - 3, int(need / 0.9) + 4) if int(v * 0.9) == need)
    rooms["cuda"] = exact  # 90 % of it is exactly the weights: they fit with no margin asked
    assert memory.check_weights_fit("m", config, torch.float32, device="cuda", margin=1.0) == need


def test_a_composite_configs_text_stack_is_cut_and_sized_without_building_it_whole(monkeypatch):
    from transformers import Gemma3Config

    config = Gemma3Config(text_config=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=7,
                                           num_attention_heads=2, num_key_value_heads=1, head_dim=16, vocab_size=100))
    cut = memory._with_layers(config, 2)
    assert cut.get_text_config().num_hidden_layers == 2 and len(cut.get_text_config().layer_types) == 2
    assert config.get_text_config().num_hidden_layers == 7  # the original is untouched
    built = []
    monkeypatch.setattr(memory, "_meta_count", lambda c: built.append(c.get_text_config().num_hidden_layers) or
                        {1: 1000, 2: 1300}[c.get_text_config().num_hidden_layers])
    assert memory.count_parameters(config) == 1000 + 6 * 300  # 7 layers from builds of 1 and 2
    assert sorted(built) == [1, 2]


def test_a_config_that_names_no_depth_is_built_whole(monkeypatch):
    import types

    built = []
    monkeypatch.setattr(memory, "_meta_count", lambda c: built.append(c) or 4321)
    config = types.SimpleNamespace(hidden_size=8, vocab_size=10)  # no layer count under any of its names
    assert memory.count_parameters(config) == 4321 and built == [config]
