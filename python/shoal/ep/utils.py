"""Event overlap (DeepEP's EventOverlap) and the checks shoal.ep's calls share."""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence


def torch_module() -> Any:
    """torch, or a clear ImportError: shoal.ep serves PyTorch and needs it."""
    try:
        import torch
    except ImportError as e:  # pragma: no cover - CPU CI has no torch
        raise ImportError("shoal.ep needs PyTorch (pip install torch)") from e
    return torch


def timeout_s() -> float:
    """Seconds a host or device wait on a peer may take before it reports (SHOAL_EP_TIMEOUT_S, default 60)."""
    return float(os.environ.get("SHOAL_EP_TIMEOUT_S", "60"))


class EventOverlap:
    """A CUDA event recorded on the communication stream (None when the call was synchronous), plus the
    tensors that must stay alive until it completes. ``with event:`` runs the body, then makes the current
    stream wait for the event, as DeepEP's EventOverlap does."""

    def __init__(self, event: Any = None, extra_tensors: Optional[Sequence[Any]] = None) -> None:
        self.event = event
        self.extra_tensors = tuple(extra_tensors) if extra_tensors else ()

    def current_stream_wait(self) -> None:
        """Makes the current CUDA stream wait for the event (nothing when there is none)."""
        if self.event is not None:
            torch_module().cuda.current_stream().wait_event(self.event)

    def __enter__(self) -> "EventOverlap":
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self.current_stream_wait()


def check_tensor(call: str, name: str, t: Any, dtype: Any, ndim: int, device: Any, shape: Optional[tuple] = None,
                 contiguous: bool = True) -> None:
    """Raises TypeError/ValueError naming `call` and `name` unless t is a CUDA tensor as asked (contiguous unless
    contiguous=False)."""
    torch = torch_module()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{call}: {name} must be a torch.Tensor, got {type(t).__name__}")
    dtypes = dtype if isinstance(dtype, tuple) else (dtype,)
    if t.dtype not in dtypes:
        raise TypeError(f"{call}: {name} must have dtype {' or '.join(str(d) for d in dtypes)}, got {t.dtype}")
    if t.dim() != ndim:
        raise ValueError(f"{call}: {name} must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{call}: {name} must be on {device}, got {t.device}")
    if shape is not None:
        for i, n in enumerate(shape):
            if n is not None and t.shape[i] != n:
                raise ValueError(f"{call}: {name} must have shape {tuple('*' if s is None else s for s in shape)}, "
                                 f"got {tuple(t.shape)}")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{call}: {name} must be contiguous")
