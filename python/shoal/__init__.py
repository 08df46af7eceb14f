"""shoal: an OpenSHMEM/NVSHMEM-style PGAS runtime. ``shoal.core`` mirrors nvshmem4py's ``nvshmem.core``."""

from . import core

__all__ = ["core"]
