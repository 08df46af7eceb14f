"""shoal.ep: MoE expert-parallel dispatch/combine shaped like DeepEP V1 (``deep_ep``): switch by import.

``Buffer`` (normal mode over NVLink, low-latency mode through shoal.ep._low_latency), ``Config``,
``EventOverlap`` and ``topk_idx_t`` (the dtype of top-k indices, torch.int64). Importing needs nothing;
using a Buffer needs PyTorch and a CUDA build of shoal (the extension shoal._ep). See docs/ep.md."""

from typing import Any

from .buffer import Buffer
from .config import Config
from .utils import EventOverlap, torch_module

__all__ = ["Buffer", "Config", "EventOverlap", "topk_idx_t"]


def __getattr__(name: str) -> Any:
    # topk_idx_t is a torch dtype: resolved on first use, so that importing shoal.ep does not need torch.
    if name == "topk_idx_t":
        return torch_module().int64
    raise AttributeError(f"module 'shoal.ep' has no attribute {name!r}")
