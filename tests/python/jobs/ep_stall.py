"""Job of ep_stall_check.py (under torchrun, 2 ranks): the last rank makes its Buffer and then never dispatches;
rank 0 dispatches (num_worst_tokens: no host wait for the counts), so its kernel's bounded wait for that peer
expires after SHOAL_EP_TIMEOUT_S, reports through shoal's report box and traps. Rank 0 says what its
synchronize raised and leaves; the stalled rank leaves after it."""
import os
import time

import torch
import torch.distributed as dist

from shoal.ep import Buffer
from shoal.ep.config import nvl_bytes_needed

NUM_EXPERTS, TOKENS, HIDDEN, TOPK = 16, 64, 2048, 2

torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
buffer = Buffer(dist.group.WORLD, nvl_bytes_needed(TOKENS, HIDDEN, size, num_topk=TOPK))
dist.barrier()
print(f"rank {rank}: buffer ready", flush=True)
if rank == size - 1:
    time.sleep(float(os.environ.get("SHOAL_EP_TIMEOUT_S", "2")) * 4)
    print(f"rank {rank}: stalled rank leaving", flush=True)
    os._exit(0)
dev = torch.device("cuda")
x = torch.randn((TOKENS, HIDDEN), device=dev).to(torch.bfloat16)
topk_idx = torch.stack([torch.arange(TOKENS) % NUM_EXPERTS, (torch.arange(TOKENS) + 9) % NUM_EXPERTS], dim=1)
topk_idx = topk_idx.to(torch.int64).to(dev)
weights = torch.ones((TOKENS, TOPK), dtype=torch.float32, device=dev)
per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, NUM_EXPERTS)
start = time.monotonic()
try:
    buffer.dispatch(x, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
                    topk_idx=topk_idx, topk_weights=weights, num_worst_tokens=TOKENS * size)
    torch.cuda.synchronize()
    print(f"rank {rank}: dispatch returned without the stalled peer", flush=True)
except Exception as e:  # the trap: torch reports the failed launch
    print(f"rank {rank}: dispatch raised after {time.monotonic() - start:.1f} s: {type(e).__name__}", flush=True)
time.sleep(0.5)  # the world's report thread looks every 10 ms
os._exit(3)
