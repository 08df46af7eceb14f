# shoal.ep normal mode (dispatch/combine over NVLink, or through shoal's proxy path with
# SHOAL_DISABLE_P2P=1) against a pure-torch reference, in the spirit of DeepEP's
# tests/legacy/test_intranode.py. Every rank runs the same tests in the same order (the calls are collective). Launched by ep_launch.py through torchrun (2 and 4 PEs, one GPU is enough under MPS);
# skips without torch, CUDA, shoal._ep or a torchrun environment (CPU CI collects it under shoalrun).
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("shoal.ep needs a CUDA device", allow_module_level=True)
if "RANK" not in os.environ or "MASTER_ADDR" not in os.environ:
    pytest.skip("run through tests/python/ep_launch.py (torchrun)", allow_module_level=True)
pytest.importorskip("shoal._ep")

import torch.distributed as dist  # noqa: E402

from shoal.ep import Buffer, Config, EventOverlap  # noqa: E402
from shoal.ep.config import nvl_bytes_needed  # noqa: E402

NUM_EXPERTS = 256
MAX_TOKENS = 4096
MAX_HIDDEN = 7168


@pytest.fixture(scope="module")
def group():
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    if not dist.is_initialized():
        dist.init_process_group("gloo")  # several ranks may share one GPU (MPS): NCCL refuses that
    return dist.group.WORLD


# SHOAL_DISABLE_P2P=1 (python_ep_normal_test_proxy): every peer is behind shoal's proxy path, so the buffers
# hold staging slabs too.
PROXY = os.environ.get("SHOAL_DISABLE_P2P", "0").lower() in ("1", "true", "yes", "on")


# Normal mode over the proxy is on unless SHOAL_EP_PROXY=0; with it off, a Buffer whose ranks reach each
# other through the proxy raises a clear error on every rank.
PROXY_ENABLED = os.environ.get("SHOAL_EP_PROXY", "1") != "0"


@pytest.mark.skipif(not PROXY or PROXY_ENABLED, reason="the refusal needs proxy peers and SHOAL_EP_PROXY=0")
def test_proxy_refused_when_off(group):
    with pytest.raises(NotImplementedError, match=r"reached through shoal's proxy path.*SHOAL_EP_PROXY=0"):
        Buffer(group, nvl_bytes_needed(MAX_TOKENS, MAX_HIDDEN, group.size(), num_topk=8, proxy=True))
    # Nothing is left behind: a Buffer without proxy peers could follow; the group still works.
    dist.barrier()


@pytest.mark.skipif(os.environ.get("SHOAL_EP_INTERLEAVE", "0") in ("0", "1"),
                    reason="python_ep_bad_switch_test.np2 sets SHOAL_EP_INTERLEAVE=2")
def test_bad_switch_refused(group):
    # Every rank reads the same environment, so every rank raises alike, in the constructor: no call has run.
    with pytest.raises(ValueError, match=r"SHOAL_EP_INTERLEAVE must be 0 or 1, not '2'"):
        Buffer(group, nvl_bytes_needed(MAX_TOKENS, MAX_HIDDEN, group.size(), num_topk=8))
    dist.barrier()


def test_bad_switch_on_one_rank_raises_on_every_rank(group):
    # The constructor agrees on the switches before it allocates: rank 0's bad value makes every rank raise, and
    # none is left waiting in the collective allocation.
    var, rank = "SHOAL_EP_SELF_DIRECT", group.rank()
    old = os.environ.get(var)
    if rank == 0:
        os.environ[var] = "on"
    try:
        where = "" if rank == 0 else r" \(rank 0's environment\)"
        with pytest.raises(ValueError, match=r"SHOAL_EP_SELF_DIRECT must be 0 or 1, not 'on'" + where):
            Buffer(group, nvl_bytes_needed(MAX_TOKENS, MAX_HIDDEN, group.size(), num_topk=8))
    finally:
        if old is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old
    dist.barrier()


@pytest.fixture(scope="module")
def buffer(group):
    if PROXY and not PROXY_ENABLED:
        pytest.skip("normal mode over the proxy is off with SHOAL_EP_PROXY=0 (test_proxy_refused_when_off)")
    buf = Buffer(group, nvl_bytes_needed(MAX_TOKENS, MAX_HIDDEN, group.size(), num_topk=8, proxy=PROXY))
    if PROXY:  # the proxy variant must really take the proxy path
        assert buf.num_proxy_peers == group.size() - 1 and buf.staged
    yield buf
    buf.destroy()


# --- inputs every rank can rebuild for every other rank, and the pure-torch reference ---

def make_inputs(seed, rank, num_tokens, hidden, num_topk, num_ranks, mode="random"):
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    x = torch.randn((num_tokens, hidden), generator=g).to(torch.bfloat16)
    scores = torch.randn((num_tokens, NUM_EXPERTS), generator=g).abs() + 1
    if mode == "empty":  # experts 0, 2, 4 ... receive nothing
        scores[:, ::2] = 0
    if mode == "one_rank":  # every token goes to rank 0's experts only
        scores[:, NUM_EXPERTS // num_ranks:] = 0
    topk_idx = scores.topk(num_topk, dim=-1).indices.to(torch.int64)
    if mode == "mask" and num_tokens:
        drop = torch.rand((num_tokens, num_topk), generator=g) < 0.2
        topk_idx[drop] = -1
    weights = torch.rand((num_tokens, num_topk), generator=g, dtype=torch.float32) + 0.1
    return x, topk_idx, weights


def ref_layout(topk_idx, num_ranks):
    per_rank_experts = NUM_EXPERTS // num_ranks
    rank_of = torch.where(topk_idx >= 0, topk_idx // per_rank_experts, torch.full_like(topk_idx, -1))
    in_rank = torch.stack([(rank_of == r).any(dim=1) for r in range(num_ranks)], dim=1) \
        if topk_idx.shape[0] else torch.zeros((0, num_ranks), dtype=torch.bool)
    per_rank = in_rank.sum(dim=0).to(torch.int32)
    per_expert = torch.stack([(topk_idx == e).sum() for e in range(NUM_EXPERTS)]).to(torch.int32)
    return per_rank, per_expert, in_rank


def ref_received(inputs, me, num_ranks):
    """Rows rank `me` receives: by source rank, then token; local expert index or -1; weights or 0."""
    local = NUM_EXPERTS // num_ranks
    xs, idxs, ws, srcs = [], [], [], []
    for x, topk_idx, weights in inputs:
        _, _, in_rank = ref_layout(topk_idx, num_ranks)
        tokens = in_rank[:, me].nonzero().flatten()
        idx = topk_idx[tokens]
        mine = (idx >= me * local) & (idx < (me + 1) * local)
        xs.append(x[tokens])
        idxs.append(torch.where(mine, idx - me * local, torch.full_like(idx, -1)))
        ws.append(torch.where(mine, weights[tokens], torch.zeros_like(weights[tokens])))
        srcs.append(tokens.to(torch.int32))
    return torch.cat(xs), torch.cat(idxs), torch.cat(ws), torch.cat(srcs)


def calc_diff(x, y):
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    return 0.0 if denom == 0 else float(1 - 2 * (x * y).sum() / denom)


def per_token_fp8(x):
    t, h = x.shape
    blocks = x.float().view(t, h // 128, 128)
    scales = (blocks.abs().amax(dim=-1) / 448.0).clamp(min=1e-4)
    q = (blocks / scales.unsqueeze(-1)).to(torch.float8_e4m3fn).view(t, h)
    return q, scales


def fp8_input(x, scale_layout):
    """x as DeepEP's callers pass it: row-major float32 scales, column-major ones (DeepEP's own tests:
    scales.T.contiguous().T) or int32 (packed scale words are 4-byte opaque values to the layer)."""
    q, s = per_token_fp8(x)
    if scale_layout == "col":
        s = s.T.contiguous().T
    elif scale_layout == "int32":
        s = s.view(torch.int32)
    return q, s


def dequant(q, scales):
    t, h = q.shape
    return (q.float().view(t, h // 128, 128) * scales.unsqueeze(-1)).view(t, h)


# --- one full round: layout, dispatch, combine, all checked ---

def run_round(buffer, seed, num_tokens, hidden, num_topk, mode="random", fp8=False, async_mode=False,
              previous=False, worst=0, alignment=1, scale_layout="row"):
    R, me, dev = buffer.group_size, buffer.rank, buffer.device
    inputs = [make_inputs(seed, r, num_tokens, hidden, num_topk, R, mode) for r in range(R)]
    x, topk_idx, weights = inputs[me]
    x, topk_idx, weights = x.to(dev), topk_idx.to(dev), weights.to(dev)

    ref_rank, ref_expert, ref_in_rank = ref_layout(inputs[me][1], R)
    event = buffer.capture() if previous else None
    per_rank, per_rdma, per_expert, in_rank, ev = buffer.get_dispatch_layout(
        topk_idx, NUM_EXPERTS, previous_event=event, async_finish=async_mode, allocate_on_comm_stream=previous)
    ev.current_stream_wait()
    assert per_rdma is None
    assert torch.equal(per_rank.cpu(), ref_rank)
    assert torch.equal(per_expert.cpu(), ref_expert)
    assert torch.equal(in_rank.cpu(), ref_in_rank)
    # The counts all-reduced over the group equal the sum of every rank's reference.
    total_expert = per_expert.cpu().clone()
    dist.all_reduce(total_expert)
    assert torch.equal(total_expert, sum(ref_layout(inp[1], R)[1] for inp in inputs))

    x_in = fp8_input(x, scale_layout) if fp8 else x
    event = buffer.capture() if previous else None
    recv_x, recv_idx, recv_w, per_expert_list, handle, ev = buffer.dispatch(
        x_in, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
        topk_idx=topk_idx, topk_weights=weights, expert_alignment=alignment, num_worst_tokens=worst,
        previous_event=event, async_finish=async_mode, allocate_on_comm_stream=previous)
    ev.current_stream_wait()
    exp_x, exp_idx, exp_w, exp_src = ref_received(inputs, me, R)
    n = exp_x.shape[0]
    recv_scales = None
    if fp8:
        recv_x, recv_scales = recv_x
        assert recv_scales.dtype == (torch.int32 if scale_layout == "int32" else torch.float32)
        assert recv_scales.is_contiguous()
        recv_scales = recv_scales.view(torch.float32)
    assert recv_x.shape[0] == (worst if worst else n)
    if fp8:
        q, s = per_token_fp8(exp_x.to(dev))
        assert torch.equal(recv_x[:n].view(torch.uint8), q.view(torch.uint8))
        assert torch.equal(recv_scales[:n], s)
    else:
        assert torch.equal(recv_x[:n].cpu(), exp_x)
    assert torch.equal(recv_idx[:n].cpu(), exp_idx)
    assert torch.equal(recv_w[:n].cpu(), exp_w)
    if worst:
        assert per_expert_list == []
        assert (recv_idx[n:] == -1).all()
    else:
        local = NUM_EXPERTS // R
        counts = sum(ref_layout(inp[1], R)[1] for inp in inputs)[me * local:(me + 1) * local]
        assert per_expert_list == [(int(c) + alignment - 1) // alignment * alignment for c in counts]
    assert torch.equal(handle[3][:n].cpu(), exp_src)
    sent = torch.stack([ref_layout(inp[1], R)[0] for inp in inputs])  # [src, dst]
    assert torch.equal(handle[0].cpu(), sent.cumsum(dim=0).to(torch.int32))

    # Combine: every rank sends its rows back unchanged; each token's sum is x times its rank count.
    rows = dequant(recv_x, recv_scales).to(torch.bfloat16) if fp8 else recv_x
    event = buffer.capture() if previous else None
    combined, combined_w, ev = buffer.combine(rows, handle, topk_weights=recv_w, previous_event=event,
                                              async_finish=async_mode, allocate_on_comm_stream=previous)
    ev.current_stream_wait()
    count = ref_in_rank.sum(dim=1, keepdim=True).float()
    base = dequant(*per_token_fp8(x)).to(torch.bfloat16).cpu() if fp8 else inputs[me][0]
    expected = (base.float() * count).to(torch.bfloat16)
    assert calc_diff(combined.cpu().float(), expected.float()) < 5e-6
    if not fp8:
        assert torch.equal(combined.cpu(), expected)
    else:
        assert calc_diff(combined.cpu().float() / count.clamp(min=1), inputs[me][0].float() * (count > 0)) < 2e-3
    exp_weights = torch.where(inputs[me][1] >= 0, inputs[me][2], torch.zeros_like(inputs[me][2]))
    assert torch.equal(combined_w.cpu(), exp_weights)
    return handle, x, recv_x, recv_w


# --- cases (the list) ---

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_bf16(buffer, seed):
    run_round(buffer, seed, 256, 7168, 8)


SWITCH_VARS = {"l2_discard": "SHOAL_EP_L2_DISCARD", "self_direct": "SHOAL_EP_SELF_DIRECT",
               "interleave": "SHOAL_EP_INTERLEAVE"}


def test_switches_per_call_and_rank(buffer):
    """A switch changes only what its rank's own blocks do: with the ranks on different combinations, changed
    between calls, every round still matches the reference; the Buffer starts from the environment's."""
    me = buffer.rank
    start = buffer.switches
    assert start == {f: os.environ.get(var, "0") == "1" for f, var in SWITCH_VARS.items()}
    try:
        for i in range(8):
            combo = (i + 3 * me) % 8
            buffer.set_switches(l2_discard=bool(combo & 1), self_direct=bool(combo & 2), interleave=bool(combo & 4))
            assert buffer.switches == {"l2_discard": bool(combo & 1), "self_direct": bool(combo & 2),
                                       "interleave": bool(combo & 4)}
            run_round(buffer, 40 + i, 512, 4096, 8, fp8=i % 3 == 2)
        buffer.set_switches(self_direct=not start["self_direct"])  # None keeps the others
        assert buffer.switches["interleave"] is bool(combo & 4)  # the last combination's
    finally:
        buffer.set_switches(**start)
    assert buffer.switches == start
    with pytest.raises(ValueError, match=r"set_switches: interleave must be a bool or None, got 1"):
        buffer.set_switches(interleave=1)
    with pytest.raises(TypeError):
        buffer.set_switches(True)  # keyword-only
    assert buffer.switches == start


@pytest.mark.parametrize("hidden", [2048, 4096])
def test_hidden_sizes(buffer, hidden):
    run_round(buffer, 3, 192, hidden, 8)


@pytest.mark.parametrize("mode", ["mask", "empty", "one_rank"])
def test_routings(buffer, mode):
    run_round(buffer, 4, 160, 2048, 8, mode=mode)


@pytest.mark.parametrize("num_tokens", [0, 1])
def test_tiny(buffer, num_tokens):
    run_round(buffer, 5, num_tokens, 2048, 8)


def test_topk1(buffer):
    run_round(buffer, 6, 256, 4096, 1)


@pytest.mark.parametrize("seed,scale_layout", [(7, "row"), (8, "row"), (12, "col"), (13, "int32")])
def test_fp8(buffer, seed, scale_layout):
    run_round(buffer, seed, 256, 7168, 8, fp8=True, scale_layout=scale_layout)


@pytest.mark.parametrize("async_mode,previous", [(True, False), (False, True), (True, True)])
def test_async_and_previous_event(buffer, async_mode, previous):
    run_round(buffer, 9, 200, 2048, 8, async_mode=async_mode, previous=previous)


def test_worst_tokens_and_alignment(buffer):
    run_round(buffer, 10, 128, 2048, 8, worst=128 * buffer.group_size)
    run_round(buffer, 11, 128, 2048, 8, alignment=128)


def test_deepep_shape(buffer):
    run_round(buffer, 12, MAX_TOKENS, MAX_HIDDEN, 8)


def test_cached_dispatch(buffer):
    handle, x, recv_x, _ = run_round(buffer, 13, 300, 4096, 8)
    again, idx, w, per_expert_list, handle2, ev = buffer.dispatch(x, handle=handle)
    assert idx is None and w is None and per_expert_list == []
    assert torch.equal(again, recv_x)
    assert handle2 is handle
    # A second cached round trip with different data moves it the same way.
    y = (x.float() * 2).to(torch.bfloat16)
    recv_y, *_ = buffer.dispatch(y, handle=handle)
    assert torch.equal(recv_y, (recv_x.float() * 2).to(torch.bfloat16))
    combined, none_w, _ = buffer.combine(recv_y, handle, bias=(y, x))
    assert none_w is None
    count = handle[4].sum(dim=1, keepdim=True).float()
    expected = (y.float() * count + y.float() + x.float()).to(torch.bfloat16)
    assert calc_diff(combined.float(), expected.float()) < 5e-6


def test_weighted_combine(buffer):
    handle, x, recv_x, recv_w = run_round(buffer, 14, 256, 2048, 8)
    y = (recv_x.float() * recv_w.sum(dim=1, keepdim=True)).to(torch.bfloat16)
    combined, _, _ = buffer.combine(y, handle)
    R, me = buffer.group_size, buffer.rank
    x_cpu, topk_idx, weights = make_inputs(14, me, 256, 2048, 8, R)
    local = NUM_EXPERTS // R
    expected = torch.zeros((256, 2048), dtype=torch.float32)
    for d in range(R):
        mine = (topk_idx >= d * local) & (topk_idx < (d + 1) * local)
        part = (x_cpu.float() * torch.where(mine, weights, torch.zeros_like(weights)).sum(1, keepdim=True)).to(torch.bfloat16)
        expected += torch.where(mine.any(1, keepdim=True), part.float(), torch.zeros_like(part.float()))
    assert calc_diff(combined.cpu().float(), expected.to(torch.bfloat16).float()) < 5e-6


# --- CUDA graphs: what is capturable is exactly the path without a host wait ---

def test_graph_capture(buffer):
    """get_dispatch_layout + dispatch (num_worst_tokens: no host wait for the counts) + combine captured in
    one CUDA graph, then replayed with new tokens AND new routings copied into the static inputs: the
    layout and the count exchange run on the device, so every replay is checked against the reference."""
    R, me, dev = buffer.group_size, buffer.rank, buffer.device
    num_tokens, hidden, num_topk = 96, 2048, 8
    worst = num_tokens * R
    x, topk_idx, weights = (t.to(dev) for t in make_inputs(20, me, num_tokens, hidden, num_topk, R))

    def step():
        per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, NUM_EXPERTS)
        recv_x, recv_idx, recv_w, per_expert_list, handle, _ = buffer.dispatch(
            x, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
            topk_idx=topk_idx, topk_weights=weights, num_worst_tokens=worst)
        combined, combined_w, _ = buffer.combine(recv_x, handle, topk_weights=recv_w)
        return recv_x, recv_idx, recv_w, per_expert_list, handle, combined, combined_w

    step()  # eager warm-up: loads the kernels and runs one round (every rank makes the same calls)
    torch.cuda.synchronize()
    s = torch.cuda.Stream(device=dev)
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        recv_x, recv_idx, recv_w, per_expert_list, handle, combined, combined_w = step()
    assert per_expert_list == []
    for rnd, mode in enumerate(["random", "mask", "one_rank", "random"]):
        inputs = [make_inputs(40 + rnd, r, num_tokens, hidden, num_topk, R, mode) for r in range(R)]
        x.copy_(inputs[me][0].to(dev))
        topk_idx.copy_(inputs[me][1].to(dev))
        weights.copy_(inputs[me][2].to(dev))
        g.replay()
        torch.cuda.synchronize()
        exp_x, exp_idx, exp_w, exp_src = ref_received(inputs, me, R)
        n = exp_x.shape[0]
        assert torch.equal(recv_x[:n].cpu(), exp_x), f"replay {rnd} ({mode}): recv_x"
        assert torch.equal(recv_idx[:n].cpu(), exp_idx), f"replay {rnd}: recv_topk_idx"
        assert torch.equal(recv_w[:n].cpu(), exp_w), f"replay {rnd}: recv_topk_weights"
        assert (recv_idx[n:] == -1).all(), f"replay {rnd}: rows past the received ones"
        assert torch.equal(handle[3][:n].cpu(), exp_src), f"replay {rnd}: recv_src_idx"
        sent = torch.stack([ref_layout(inp[1], R)[0] for inp in inputs])
        assert torch.equal(handle[0].cpu(), sent.cumsum(dim=0).to(torch.int32)), f"replay {rnd}: rank_prefix_matrix"
        count = ref_layout(inputs[me][1], R)[2].sum(dim=1, keepdim=True).float()
        expected = (inputs[me][0].float() * count).to(torch.bfloat16)
        assert torch.equal(combined.cpu(), expected), f"replay {rnd}: combined_x"
        exp_weights = torch.where(inputs[me][1] >= 0, inputs[me][2], torch.zeros_like(inputs[me][2]))
        assert torch.equal(combined_w.cpu(), exp_weights), f"replay {rnd}: combined_topk_weights"
    del g


def test_graph_capture_cached_dispatch(buffer):
    """A cached dispatch (handle of an eager dispatch: known counts) + combine, captured and replayed with
    new tokens on the same routing."""
    handle, x, recv_x, _ = run_round(buffer, 21, 160, 4096, 8)
    torch.cuda.synchronize()
    xs = x.clone()
    s = torch.cuda.Stream(device=buffer.device)
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        got, _, _, _, _, _ = buffer.dispatch(xs, handle=handle)
        combined, _, _ = buffer.combine(got, handle)
    count = handle[4].sum(dim=1, keepdim=True).float()
    for rnd in range(3):
        xs.copy_((x.float() * (rnd + 2)).to(torch.bfloat16))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(got, (recv_x.float() * (rnd + 2)).to(torch.bfloat16)), f"replay {rnd}: recv_x"
        assert calc_diff(combined.float(), xs.float() * count) < 5e-6, f"replay {rnd}: combined_x"
    del g


def test_graph_capture_needs_worst_tokens(buffer):
    """Without num_worst_tokens (or a handle) dispatch would wait on the host for the counts: while a graph is
    being captured it raises before anything is recorded."""
    dev = buffer.device
    x, topk_idx, weights = (t.to(dev) for t in make_inputs(22, buffer.rank, 32, 2048, 8, buffer.group_size))
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, NUM_EXPERTS)
    torch.cuda.synchronize()
    s = torch.cuda.Stream(device=dev)
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="num_worst_tokens"):
        with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
            buffer.dispatch(x, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                            num_tokens_per_expert=per_expert, topk_idx=topk_idx, topk_weights=weights)
    del g


# --- bad input raises before anything is launched (the same on every rank, so nothing hangs) ---

def test_bad_input(buffer):
    dev = buffer.device
    topk = torch.zeros((4, 2), dtype=torch.int64, device=dev)
    with pytest.raises(TypeError, match="topk_idx"):
        buffer.get_dispatch_layout(topk.to(torch.int32), NUM_EXPERTS)
    with pytest.raises(ValueError, match="topk_idx"):
        buffer.get_dispatch_layout(topk.cpu(), NUM_EXPERTS)
    with pytest.raises(ValueError, match="outside"):
        buffer.get_dispatch_layout(topk + NUM_EXPERTS, NUM_EXPERTS)
    with pytest.raises(ValueError, match="multiple"):
        buffer.get_dispatch_layout(topk, buffer.group_size * 3 + 1)
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk, NUM_EXPERTS)
    with pytest.raises(TypeError, match="x must have dtype"):
        buffer.dispatch(torch.zeros((4, 128), dtype=torch.float32, device=dev), num_tokens_per_rank=per_rank,
                        is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    with pytest.raises(ValueError, match="is_token_in_rank"):
        buffer.dispatch(torch.zeros((5, 128), dtype=torch.bfloat16, device=dev), num_tokens_per_rank=per_rank,
                        is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    with pytest.raises(ValueError, match="this rank's 16384 tokens.*needs at least"):  # num_worst_tokens: own T
        too_many = MAX_TOKENS * 4
        buffer.dispatch(torch.zeros((too_many, MAX_HIDDEN), dtype=torch.bfloat16, device=dev),
                        num_tokens_per_rank=per_rank,
                        is_token_in_rank=torch.zeros((too_many, buffer.group_size), dtype=torch.bool, device=dev),
                        num_tokens_per_expert=per_expert, num_worst_tokens=too_many)
    with pytest.raises(ValueError, match="scales must have shape"):
        x8 = torch.zeros((4, 2048), dtype=torch.float8_e4m3fn, device=dev)
        buffer.dispatch((x8, torch.ones((5, 4), dtype=torch.float32, device=dev)), num_tokens_per_rank=per_rank,
                        is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    with pytest.raises(ValueError, match="FP8 x comes as"):
        buffer.dispatch(x8, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert)
    with pytest.raises(ValueError, match="even"):
        Config(num_sms=3)


def test_deepep_api_names(buffer):
    """DeepEP V1 names beyond dispatch and combine (DeepEP's tests use the first two)."""
    import shoal.ep as ep_pkg
    dev = buffer.device
    assert ep_pkg.topk_idx_t is torch.int64
    assert Buffer.is_sm90_compiled()
    assert isinstance(buffer.get_comm_stream(), torch.cuda.Stream)
    t = buffer.get_local_buffer_tensor(torch.int32, torch.Size([2, 4]), offset=16)
    assert t.shape == (2, 4) and t.device == dev and t.dtype == torch.int32
    assert t.data_ptr() == buffer.get_local_buffer_tensor(torch.int32).data_ptr() + 64
    with pytest.raises(ValueError, match="offset"):
        buffer.get_local_buffer_tensor(torch.uint8, offset=-1)
    with pytest.raises(RuntimeError, match="RDMA"):
        buffer.get_local_buffer_tensor(torch.uint8, use_rdma_buffer=True)
    with pytest.raises(NotImplementedError, match="shrink"):
        buffer.low_latency_query_mask_buffer(torch.zeros(buffer.group_size, dtype=torch.int, device=dev))


def test_call_before_init_or_without_group():
    with pytest.raises(ValueError, match="group"):
        Buffer(None, 1 << 24)
    assert isinstance(Buffer.capture(), EventOverlap)


# --- review fixes: each checked here on the GPU ---

def test_capacity_error_is_collective(buffer):
    """Ranks with different T, one of them sending another more tokens than a slab holds: every rank raises
    the same ValueError (notify publishes the job-wide most tokens one rank sends one rank, and the host
    checks it before any dispatch kernel), none waits for a peer, and the Buffer works after."""
    R, me, dev = buffer.group_size, buffer.rank, buffer.device
    num_tokens = MAX_TOKENS + 500 if me == 0 else 16
    x, topk_idx, weights = (t.to(dev) for t in make_inputs(50, me, num_tokens, MAX_HIDDEN, 8, R, "one_rank"))
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, NUM_EXPERTS)
    with pytest.raises(ValueError, match=f"too small for a rank sending one rank {MAX_TOKENS + 500} tokens"):
        buffer.dispatch(x, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
                        topk_idx=topk_idx, topk_weights=weights)
    torch.cuda.synchronize()
    dist.barrier()
    run_round(buffer, 51, 64, 2048, 8)


def test_raw_copy_keeps_earlier_result(buffer):
    """Raw-copy calls keep the start handshake: a raw dispatch / combine of other data right after a real one
    never overwrites a slab the last rank (started late on purpose) is still reading."""
    R, me = buffer.group_size, buffer.rank
    handle, x, recv_x, _ = run_round(buffer, 52, MAX_TOKENS, MAX_HIDDEN, 8)
    count = handle[4].sum(dim=1, keepdim=True).float()
    expected = (x.float() * count).to(torch.bfloat16)
    y = (x.float() * 3).to(torch.bfloat16)
    for rnd in range(3):
        torch.cuda.synchronize()
        dist.barrier()
        if me == R - 1:
            torch.cuda._sleep(20_000_000)  # its real calls start late; the others race ahead into raw calls
        got, *_ = buffer.dispatch(x, handle=handle)
        buffer.raw_copy_dispatch(y, handle)
        combined, _, _ = buffer.combine(got, handle)
        buffer.raw_copy_combine((got.float() * 3).to(torch.bfloat16), handle)
        torch.cuda.synchronize()
        assert torch.equal(got, recv_x), f"round {rnd}: dispatch result overwritten by a raw call"
        assert torch.equal(combined, expected), f"round {rnd}: combine result overwritten by a raw call"


def test_combine_after_worst_tokens_cut(buffer):
    """num_worst_tokens smaller than the rows a rank receives (the caller's error): dispatch drops the rows past
    it, combine reads nothing past x and returns zeros for them, so each token sums the ranks that kept it."""
    R, me, dev = buffer.group_size, buffer.rank, buffer.device
    num_tokens, hidden, worst = 64, 2048, 40
    inputs = [make_inputs(53, r, num_tokens, hidden, 8, R) for r in range(R)]
    x, topk_idx, weights = (t.to(dev) for t in inputs[me])
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, NUM_EXPERTS)
    recv_x, _, _, _, handle, _ = buffer.dispatch(
        x, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
        topk_idx=topk_idx, topk_weights=weights, num_worst_tokens=worst)
    assert recv_x.shape[0] == worst
    combined, _, _ = buffer.combine(recv_x, handle)
    torch.cuda.synchronize()
    # Token t of this rank is row (rows from ranks before me) + (its index among my tokens for d) on rank d.
    in_ranks = [ref_layout(inp[1], R)[2] for inp in inputs]  # [src] -> [T, R]
    kept = torch.zeros(num_tokens)
    for d in range(R):
        before = sum(int(in_ranks[s][:, d].sum()) for s in range(me))
        mine = in_ranks[me][:, d]
        row = before + mine.to(torch.int64).cumsum(0) - 1
        kept += (mine & (row < worst)).float()
    expected = (inputs[me][0].float() * kept.unsqueeze(1)).to(torch.bfloat16)
    assert torch.equal(combined.cpu(), expected)


def test_fp8_scales_any_column_count(buffer):
    """FP8 scales of any column count, as DeepEP takes them (e.g. packed UE8M0 int32 [T, H/512], column-major):
    moved as opaque 4-byte words to the received rows, in the received order."""
    R, me, dev = buffer.group_size, buffer.rank, buffer.device
    num_tokens, hidden = 128, 2048
    inputs = [make_inputs(54, r, num_tokens, hidden, 8, R) for r in range(R)]
    packed = [torch.randint(-2**31, 2**31 - 1, (num_tokens, hidden // 512), generator=torch.Generator().manual_seed(r),
                            dtype=torch.int32) for r in range(R)]
    x, topk_idx, weights = (t.to(dev) for t in inputs[me])
    q = per_token_fp8(x)[0]
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, NUM_EXPERTS)
    (recv_q, recv_s), _, _, _, handle, _ = buffer.dispatch(
        (q, packed[me].to(dev).T.contiguous().T), num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
        num_tokens_per_expert=per_expert, topk_idx=topk_idx, topk_weights=weights)
    assert recv_s.dtype == torch.int32 and recv_s.shape == (recv_q.shape[0], hidden // 512)
    exp_s = torch.cat([packed[s][ref_layout(inputs[s][1], R)[2][:, me]] for s in range(R)])
    assert torch.equal(recv_s.cpu(), exp_s)
    exp_x = ref_received(inputs, me, R)[0]
    assert torch.equal(recv_q.view(torch.uint8), per_token_fp8(exp_x.to(dev))[0].view(torch.uint8))


def test_sm_budget_refused_when_pes_share_a_gpu(buffer):
    """PEs sharing one GPU: a num_sms whose blocks cannot all be resident raises on every rank alike (the job's
    PEs per GPU and SM count are agreed at construction) instead of stalling until the timeout."""
    if buffer._pes_per_gpu < 2:
        pytest.skip("every PE has a GPU of its own: any num_sms is allowed")
    sms = torch.cuda.get_device_properties(buffer.device).multi_processor_count
    too_many = min(128, (sms // buffer._pes_per_gpu + 2) // 2 * 2)
    x, topk_idx, weights = (t.to(buffer.device) for t in make_inputs(55, buffer.rank, 32, 2048, 8, buffer.group_size))
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, NUM_EXPERTS)
    with pytest.raises(ValueError, match=f"num_sms={too_many} on each of {buffer._pes_per_gpu} PEs sharing one GPU"):
        buffer.dispatch(x, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
                        topk_idx=topk_idx, topk_weights=weights, config=Config(num_sms=too_many))
    run_round(buffer, 56, 32, 2048, 8)
