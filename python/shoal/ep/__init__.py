"""shoal.ep: MoE expert-parallel dispatch/combine shaped like DeepEP V1 (``deep_ep``): switch by import.

``Buffer`` (normal mode over NVLink, low-latency mode through shoal.ep._low_latency), ``Config`` and
``EventOverlap``. Needs PyTorch and a CUDA build of shoal (the extension shoal._ep). See docs/ep.md."""

from .buffer import Buffer
from .config import Config
from .utils import EventOverlap

__all__ = ["Buffer", "Config", "EventOverlap"]
