"""The stand-in GPU (tests/fake_cuda.py) keeps a real GPU's rules, so a test that passes on it would not fail on
one for mixing devices, and a test that should fail does."""

import pytest
import torch

from tests.fake_cuda import fake_cuda


def test_cuda_tensors_say_where_they_are_and_compute_as_on_the_cpu():
    with fake_cuda():
        a = torch.arange(6.0).reshape(2, 3).cuda()
        b = torch.ones(2, 3, device=a.device)
        total = (a + b).sum()
        assert {a.device, b.device, total.device} == {torch.device("cuda", 0)} and a.is_cuda
        assert float(total) == 21.0  # 15 + 6
        assert torch.arange(3, device="cuda").device.type == "cuda"
        assert (a * torch.tensor(2.0)).device.type == "cuda"  # a 0-dim CPU scalar may mix, as on a GPU
        assert a[torch.tensor([1])].device.type == "cuda"  # so may CPU indices
        back = a.to("cpu")
        assert back.device.type == "cpu" and back.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
        assert a.to(torch.float64).device.type == "cuda" and a.to(back).device.type == "cpu"


def test_mixing_devices_and_numpy_of_a_cuda_tensor_fail_as_on_a_gpu():
    with fake_cuda():
        a = torch.ones(3).cuda()
        with pytest.raises(RuntimeError, match="same device"):
            a + torch.ones(3)
        with pytest.raises(RuntimeError, match="same device"):
            torch.bmm(torch.ones(1, 2, 2).cuda(), torch.ones(1, 2, 2))
        with pytest.raises(TypeError, match="numpy"):
            a.numpy()


def test_outside_the_context_new_tensors_are_plain_ones():
    with fake_cuda():
        inside = torch.ones(2).cuda()
    assert type(torch.ones(2, device="cpu")) is torch.Tensor and torch.zeros(1, device="meta").device.type == "meta"
    assert inside.device.type == "cuda" and type(inside.cpu()) is torch.Tensor
