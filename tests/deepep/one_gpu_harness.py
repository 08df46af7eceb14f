# --- appended by shoal's tests/deepep/run_deepep_tests.py: the one-GPU harness -------------------------------
# DeepEP's tests start one process per rank on GPU `local_rank` with an NCCL group. When the ranks share one GPU
# (under MPS) NCCL refuses, so its init_dist gets a gloo group (init_process_group's backend), device 0 for every
# rank (torch.cuda.set_device), and the GPU-tensor all_reduce, all_gather and all_gather_into_tensor the tests
# call go through host copies. Nothing else of the tests changes.
import torch.distributed as _shoal_dist

_shoal_orig = {name: getattr(_shoal_dist, name) for name in ("all_reduce", "all_gather", "all_gather_into_tensor")}


def _shoal_all_reduce(tensor, op=_shoal_dist.ReduceOp.SUM, group=None, async_op=False):
    if not tensor.is_cuda:
        return _shoal_orig["all_reduce"](tensor, op=op, group=group, async_op=async_op)
    host = tensor.cpu()
    _shoal_orig["all_reduce"](host, op=op, group=group)
    tensor.copy_(host)
    return None


def _shoal_all_gather(tensor_list, tensor, group=None, async_op=False):
    if not tensor.is_cuda:
        return _shoal_orig["all_gather"](tensor_list, tensor, group=group, async_op=async_op)
    host_list = [t.cpu() for t in tensor_list]
    _shoal_orig["all_gather"](host_list, tensor.cpu(), group=group)
    for t, h in zip(tensor_list, host_list):
        t.copy_(h)
    return None


def _shoal_all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    n = _shoal_dist.get_world_size(group)
    parts = [torch.empty_like(input_tensor, device="cpu") for _ in range(n)]
    _shoal_orig["all_gather"](parts, input_tensor.cpu(), group=group)
    output_tensor.copy_(torch.cat(parts).view_as(output_tensor))
    return None


_shoal_dist.all_reduce = _shoal_all_reduce
_shoal_dist.all_gather = _shoal_all_gather
_shoal_dist.all_gather_into_tensor = _shoal_all_gather_into_tensor


_shoal_init_process_group = _shoal_dist.init_process_group
_shoal_set_device = torch.cuda.set_device


def _shoal_gloo_group(*args, **kwargs):
    kwargs["backend"] = "gloo"
    kwargs.pop("device_id", None)
    return _shoal_init_process_group(*args, **kwargs)


_shoal_dist.init_process_group = _shoal_gloo_group
torch.cuda.set_device = lambda device: _shoal_set_device(0)
