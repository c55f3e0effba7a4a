"""Progress inside one forward pass: a callback as each decoder layer starts.

A forward pass of a long sequence (or a batch of them) runs for seconds with nothing to show. With
`each_layer`, the caller hears of every layer as it starts, in the thread that runs the pass: it can
draw progress, and it can stop the pass by raising (a cancel button's cooperative check), which unwinds
the model's forward at once. Passes run by other threads through the same model are not reported.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    import torch

    from .loading import LoadedModel

LayerCallback = Callable[[int, int], None]  # (layer index that starts, number of layers)


@contextmanager
def each_layer(loaded: LoadedModel, callback: LayerCallback | None,
               model: "torch.nn.Module | None" = None) -> Iterator[None]:
    """Call ``callback(i, n_layers)`` as decoder layer ``i`` starts, for forward passes this thread runs
    through `loaded` (a `LoadedModel`; or through `model`, a copy of its model such as a scoring copy) inside
    the block. An exception the callback raises ends the pass. With `callback` None, nothing is installed.

    Args:
        loaded: The model whose passes are reported (its family spec finds the decoder layers).
        callback: Called as ``callback(i, n_layers)`` as layer ``i`` starts, in the thread that runs the pass;
            None to install nothing.
        model: A copy of `loaded`'s model (such as a scoring copy) to report on instead; None for `loaded`'s own.

    Yields:
        None, once: the block runs with the hooks in place; on leaving, they are removed.
    """
    if callback is None:
        yield
        return
    layers = loaded.spec.decoder_layers(loaded.model if model is None else model)
    n_layers, owner = len(layers), threading.get_ident()

    def hook_for(i: int):
        def hook(module, args):
            if threading.get_ident() == owner:
                callback(i, n_layers)

        return hook

    handles = [layer.register_forward_pre_hook(hook_for(i)) for i, layer in enumerate(layers)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


__all__ = ["each_layer", "LayerCallback"]
