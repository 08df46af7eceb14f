"""The import switch for DeepEP's own tests: `import deep_ep` resolves to shoal.ep (tests/deepep/README.md)."""

from shoal.ep import Buffer, Config, EventOverlap, topk_idx_t  # noqa: F401
