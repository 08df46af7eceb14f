"""shoal.ep low-latency dispatch/combine (python/shoal/ep/_low_latency.py) against a pure-torch reference.

Every PE runs this module under shoalrun (2 and 4 PEs, on one GPU under MPS or one GPU each); each
PE rebuilds every other PE's inputs from the seed, so the reference needs no communication. Skips
without torch, without a GPU, without shoal._ep or on a non-CUDA backend (CPU CI)."""

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)
try:
    from shoal import _core, _ep  # noqa: F401
except ImportError:
    pytest.skip("shoal built without CUDA (no shoal._ep)", allow_module_level=True)

import shoal.core as sc
from shoal.ep._low_latency import LowLatency

MAX_TOKENS, MAX_HIDDEN, NUM_EXPERTS = 32, 7168, 16


@pytest.fixture(scope="module")
def dev():
    if _core.backend_name() != "cuda":
        pytest.skip("needs SHOAL_BACKEND=cuda")
    torch.cuda.set_device(sc.my_pe() % torch.cuda.device_count())
    return torch.device("cuda", torch.cuda.current_device())


def stand_in(dev, nbytes):
    return SimpleNamespace(rank=sc.my_pe(), group_size=sc.n_pes(), group=None, num_nvl_bytes=0,
                           num_rdma_bytes=nbytes, device=dev)


@pytest.fixture(scope="module")
def ll(dev):
    r = sc.n_pes()
    hint = LowLatency.get_low_latency_rdma_size_hint(MAX_TOKENS, MAX_HIDDEN, r, NUM_EXPERTS)
    obj = LowLatency(stand_in(dev, hint))
    yield obj
    obj.destroy()


def inputs(seed, pe, num_tokens, hidden, num_experts, topk, masks, dev, route=None):
    """PE pe's x (BF16), topk_idx (distinct experts, some -1) and weights for this seed."""
    g = torch.Generator().manual_seed(seed * 1000 + pe)
    x = torch.randn(num_tokens, hidden, generator=g).to(torch.bfloat16)
    x[:, -1] = torch.arange(num_tokens, dtype=torch.float32).to(torch.bfloat16)  # token index
    scores = torch.rand(num_tokens, num_experts, generator=g)
    if route is not None:  # only these experts are ever chosen
        scores[:, [e for e in range(num_experts) if e not in route]] = -1
    idx = scores.topk(topk, dim=1).indices.to(torch.int64)
    if route is not None:
        idx[scores.gather(1, idx) < 0] = -1
    for _ in range(masks if num_tokens else 0):
        idx[torch.randint(num_tokens, (1,), generator=g), torch.randint(topk, (1,), generator=g)] = -1
    w = torch.rand(num_tokens, topk, generator=g)
    return x.to(dev), idx.to(dev), w.to(dev)


def expert_scale(e):
    return 1.0 + 0.25 * (e % 4)


def dequant(recv, scales, ue8m0):
    if ue8m0:
        b = scales.contiguous().view(torch.uint8).to(torch.int32)  # [.., H/512 * 4] exponents
        s = torch.pow(2.0, (b - 127).float())
    else:
        s = scales.float()
    return recv.float() * s.repeat_interleave(128, dim=-1)


def check_dispatch(me, r, all_in, recv, count, handle, fp8, ue8m0, num_experts):
    src_info, layout_range, _, hidden, _ = handle
    nl = num_experts // r
    recv_x, scales = recv if fp8 else (recv, None)
    data = dequant(recv_x, scales, ue8m0) if fp8 else recv_x
    count, src_info, layout_range, data = count.cpu(), src_info.cpu(), layout_range.cpu(), data.cpu()
    for l in range(nl):
        e = me * nl + l
        begin = 0
        for p in range(r):
            x, idx, _ = all_in[p]
            toks = sorted((idx.cpu() == e).any(dim=1).nonzero().flatten().tolist())
            rng = int(layout_range[l, p])
            assert (rng >> 32, rng & 0xFFFFFFFF) == (begin, len(toks)), f"layout range of expert {e} from PE {p}"
            got = src_info[l, begin:begin + len(toks)].tolist()
            assert sorted(got) == toks, f"expert {e} from PE {p}: tokens {got} != {toks}"
            for i, t in enumerate(got):
                row, ref = data[l, begin + i].float(), x[t].cpu().float()
                if fp8:
                    amax = ref.view(-1, 128).abs().amax(dim=1).clamp(min=1e-4).repeat_interleave(128)
                    assert torch.all((row - ref).abs() <= ref.abs() * 0.0625 + amax * 2.0 ** -7), f"token {t}"
                else:
                    assert torch.equal(row, ref), f"expert {e}: token {t} of PE {p} differs"
            begin += len(toks)
        assert int(count[l]) == begin, f"recv count of expert {e}"
    return data


def expert_outputs(me, r, recv, fp8, ue8m0, num_experts):
    nl = num_experts // r
    recv_x, scales = recv if fp8 else (recv, None)
    y = dequant(recv_x, scales, ue8m0) if fp8 else recv_x.float()
    s = torch.tensor([expert_scale(me * nl + l) for l in range(nl)], device=y.device).view(nl, 1, 1)
    return (y * s).to(torch.bfloat16)


def reference_combine(me, r, all_in, out_of_expert):
    """out_of_expert(e, p, t) -> the BF16 row expert e returned for token t of PE p."""
    x, idx, w = all_in[me]
    acc = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for t in range(x.shape[0]):
        for k in range(idx.shape[1]):
            e = int(idx[t, k])
            if e >= 0:
                acc[t] += w[t, k] * out_of_expert(e, t).float()
    return acc.to(torch.bfloat16)


def calc_diff(a, b):
    a, b = a.double(), b.double()
    denom = (a * a + b * b).sum()
    return 0.0 if denom == 0 else float(1 - 2 * (a * b).sum() / denom)


def run_case(ll, dev, seed, num_tokens, hidden, topk, fp8=False, round_scale=False, ue8m0=False, hook=False,
             zero_copy=False, masks=3, route=None, rounds=1):
    me, r = sc.my_pe(), sc.n_pes()
    ll.clean_low_latency_buffer(MAX_TOKENS, hidden, NUM_EXPERTS)
    for rnd in range(rounds):
        all_in = [inputs(seed + 7919 * rnd, p, max(num_tokens - p % 2, 0) if num_tokens > 1 else num_tokens, hidden,
                         NUM_EXPERTS, topk, masks, dev, route) for p in range(r)]
        x, idx, w = all_in[me]
        stats = torch.zeros(NUM_EXPERTS // r, dtype=torch.int32, device=dev)
        recv, count, handle, _, h = ll.low_latency_dispatch(x, idx, MAX_TOKENS, NUM_EXPERTS,
                                                            cumulative_local_expert_recv_stats=stats, use_fp8=fp8,
                                                            round_scale=round_scale, use_ue8m0=ue8m0,
                                                            return_recv_hook=hook)
        if hook:
            h()
        check_dispatch(me, r, all_in, recv, count, handle, fp8, ue8m0, NUM_EXPERTS)
        assert torch.equal(stats.cpu(), count.cpu())
        y = expert_outputs(me, r, recv, fp8, ue8m0, NUM_EXPERTS)
        if zero_copy:
            buf = ll.get_next_low_latency_combine_buffer(handle)
            buf.copy_(y)
            y = buf
        out, _, h = ll.low_latency_combine(y, idx, w, handle, zero_copy=zero_copy, return_recv_hook=hook)
        if hook:
            h()

        def out_of_expert(e, t):
            row = x[t].float()
            if fp8:  # the expert saw the dequantized FP8 row
                g = row.view(-1, 128)
                inv = g.abs().amax(dim=1, keepdim=True).clamp(min=1e-4) / 448
                if round_scale:
                    inv = torch.pow(2.0, torch.ceil(torch.log2(inv)))
                row = ((g / inv).to(torch.float8_e4m3fn).float() * inv).flatten()
            return (row * expert_scale(e)).to(torch.bfloat16)

        ref = reference_combine(me, r, all_in, out_of_expert)
        assert not torch.isnan(out.float()).any()
        assert calc_diff(out.float(), ref.float()) < (9e-4 if fp8 else 5e-6), f"combine round {rnd}"
        if not fp8:  # FP8: a rounding flip of one term may exceed an element-wise bound
            assert torch.allclose(out.float(), ref.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("hidden", [2048, 7168])
@pytest.mark.parametrize("topk", [1, 8])
def test_bf16(ll, dev, hidden, topk):
    run_case(ll, dev, 1, 24, hidden, topk)


@pytest.mark.parametrize("round_scale,ue8m0", [(False, False), (True, False), (True, True)])
def test_fp8(ll, dev, round_scale, ue8m0):
    run_case(ll, dev, 2, 20, 2048, 8, fp8=True, round_scale=round_scale, ue8m0=ue8m0)


@pytest.mark.parametrize("hook", [False, True])
@pytest.mark.parametrize("zero_copy", [False, True])
def test_hook_and_zero_copy(ll, dev, hook, zero_copy):
    run_case(ll, dev, 3, MAX_TOKENS, 4096, 8, hook=hook, zero_copy=zero_copy)


@pytest.mark.parametrize("num_tokens", [0, 1])
def test_zero_and_one_token(ll, dev, num_tokens):
    run_case(ll, dev, 4, num_tokens, 2048, 4)


def test_empty_experts_and_one_rank(ll, dev):
    run_case(ll, dev, 5, 16, 2048, 2, route=[0, 1], masks=0)  # experts 0 and 1 (rank 0) only


def test_double_buffer_rounds(ll, dev):
    run_case(ll, dev, 6, 16, 2048, 8, rounds=4)
    run_case(ll, dev, 7, 16, 2048, 8, fp8=True, hook=True, rounds=3)


def test_graph_capture(ll, dev):
    me, r = sc.my_pe(), sc.n_pes()
    hidden, topk = 2048, 8
    ll.clean_low_latency_buffer(MAX_TOKENS, hidden, NUM_EXPERTS)
    x, idx, w = inputs(8, me, 16, hidden, NUM_EXPERTS, topk, 2, dev)
    counts = torch.zeros(NUM_EXPERTS // r, dtype=torch.int32, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        recv, count, handle, _, _ = ll.low_latency_dispatch(x, idx, MAX_TOKENS, NUM_EXPERTS, use_fp8=False)
        counts.copy_(count)
        out, _, _ = ll.low_latency_combine(recv * 2, idx, w, handle)
    for rnd in range(3):
        xs = [inputs(100 + rnd, p, 16, hidden, NUM_EXPERTS, topk, 0, dev)[0] for p in range(r)]
        x.copy_(xs[me])
        g.replay()
        torch.cuda.synchronize()
        ref = x.float() * 2 * (w * (idx >= 0)).sum(dim=1, keepdim=True)
        assert calc_diff(out.float(), ref) < 5e-6, f"replay {rnd}"
        all_idx = [inputs(8, p, 16, hidden, NUM_EXPERTS, topk, 2, dev)[1] for p in range(r)]
        nl = NUM_EXPERTS // r
        want = [sum(int((i == me * nl + l).sum()) for i in all_idx) for l in range(nl)]
        assert counts.cpu().tolist() == want
    del g


def test_bad_input(ll, dev):
    x, idx, w = inputs(9, sc.my_pe(), 4, 2048, NUM_EXPERTS, 2, 0, dev)
    d = ll.low_latency_dispatch
    with pytest.raises(ValueError, match="dtype"):
        d(x.float(), idx, MAX_TOKENS, NUM_EXPERTS)
    with pytest.raises(ValueError, match="dimensions"):
        d(x.flatten(), idx, MAX_TOKENS, NUM_EXPERTS)
    with pytest.raises(ValueError, match="topk_idx values"):
        d(x, torch.full_like(idx, NUM_EXPERTS), MAX_TOKENS, NUM_EXPERTS)
    with pytest.raises(ValueError, match="multiple of the number of ranks"):
        d(x, idx, MAX_TOKENS, sc.n_pes() * 3 + 1)
    with pytest.raises(ValueError, match="num_max_dispatch_tokens_per_rank"):
        d(x, idx, 2, NUM_EXPERTS)
    with pytest.raises(ValueError, match="topk_idx must have dtype"):
        d(x, idx.int(), MAX_TOKENS, NUM_EXPERTS)
    with pytest.raises(ValueError, match="use_ue8m0"):
        d(x, idx, MAX_TOKENS, NUM_EXPERTS, use_fp8=True, use_ue8m0=True)
    with pytest.raises(ValueError, match="too small.*need [0-9]+ bytes"):
        d(x, idx, 4 * MAX_TOKENS, NUM_EXPERTS)


def test_buffer_too_small(dev):
    small = LowLatency(stand_in(dev, 1 << 20))
    try:
        x, idx, _ = inputs(10, sc.my_pe(), 4, 2048, NUM_EXPERTS, 2, 0, dev)
        need = LowLatency.get_low_latency_rdma_size_hint(MAX_TOKENS, 2048, sc.n_pes(), NUM_EXPERTS)
        with pytest.raises(ValueError, match=f"need {need} bytes"):
            small.low_latency_dispatch(x, idx, MAX_TOKENS, NUM_EXPERTS)
    finally:
        small.destroy()


def test_graph_replays_with_new_routings_back_to_back(ll, dev):
    """A decode loop: dispatch + combine in one graph (every replay on the same halves), new tokens AND new
    routings before each replay, replays back to back with no sync or barrier between, so a PE may run ahead.
    Combine's finish words (every (expert, rank) pair, zero rows too) keep a PE from starting replay n+1's
    dispatch before every peer finished replay n's dispatch receive; each replay's outputs are checked."""
    me, r = sc.my_pe(), sc.n_pes()
    hidden, topk, nl = 2048, 8, NUM_EXPERTS // sc.n_pes()
    ll.clean_low_latency_buffer(MAX_TOKENS, hidden, NUM_EXPERTS)
    x, idx, w = inputs(30, me, 16, hidden, NUM_EXPERTS, topk, 2, dev)
    counts = torch.zeros(nl, dtype=torch.int32, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s), torch.cuda.graph(g, stream=s):
        recv, count, handle, _, _ = ll.low_latency_dispatch(x, idx, MAX_TOKENS, NUM_EXPERTS, use_fp8=False)
        counts.copy_(count)
        out, _, _ = ll.low_latency_combine(recv * 2, idx, w, handle)
    torch.cuda.synchronize()
    sc.barrier_all()
    seeds = [(31 + rnd, rnd % 3 + 1 if rnd % 2 else 0) for rnd in range(6)]  # (seed, masks): routings differ
    got = []
    for seed, masks in seeds:
        nx, nidx, nw = inputs(seed, me, 16, hidden, NUM_EXPERTS, topk, masks, dev)
        x.copy_(nx), idx.copy_(nidx), w.copy_(nw)
        g.replay()
        got.append((out.clone(), counts.clone()))  # stream-ordered after the replay, before the next copies
    torch.cuda.synchronize()
    for rnd, ((seed, masks), (o, c)) in enumerate(zip(seeds, got)):
        all_idx = [inputs(seed, p, 16, hidden, NUM_EXPERTS, topk, masks, dev)[1] for p in range(r)]
        nx, nidx, nw = inputs(seed, me, 16, hidden, NUM_EXPERTS, topk, masks, dev)
        ref = nx.float() * 2 * (nw * (nidx >= 0)).sum(dim=1, keepdim=True)
        assert calc_diff(o.float(), ref) < 5e-6, f"replay {rnd}: combined_x"
        assert c.cpu().tolist() == [sum(int((i == me * nl + l).sum()) for i in all_idx) for l in range(nl)], \
            f"replay {rnd}: recv_count"
    del g


def test_back_to_back_combines(ll, dev):
    """Three combines of one dispatch in a row (halves h0, h1, h0) with no sync between: the third may not
    overwrite a half the first is still reading on a slower peer (combine's finish words)."""
    me, r = sc.my_pe(), sc.n_pes()
    hidden, topk = 2048, 8
    ll.clean_low_latency_buffer(MAX_TOKENS, hidden, NUM_EXPERTS)
    x, idx, w = inputs(40, me, 16, hidden, NUM_EXPERTS, topk, 2, dev)
    recv, _, handle, _, _ = ll.low_latency_dispatch(x, idx, MAX_TOKENS, NUM_EXPERTS, use_fp8=False)
    outs = [ll.low_latency_combine(recv * (k + 1), idx, w, handle)[0] for k in range(3)]
    torch.cuda.synchronize()
    for k, o in enumerate(outs):
        ref = x.float() * (k + 1) * (w * (idx >= 0)).sum(dim=1, keepdim=True)
        assert calc_diff(o.float(), ref) < 5e-6, f"combine {k}"


def test_wait_stats_lengths_are_checked(ll, dev):
    """dispatch_ and combine_wait_recv_cost_stats hold one int64 per rank: a wrong length, dtype or device
    raises naming the argument, before anything is launched (on every rank alike)."""
    me, r = sc.my_pe(), sc.n_pes()
    hidden = 2048
    ll.clean_low_latency_buffer(MAX_TOKENS, hidden, NUM_EXPERTS)
    x, idx, w = inputs(41, me, 4, hidden, NUM_EXPERTS, 2, 0, dev)
    with pytest.raises(ValueError, match=f"dispatch_wait_recv_cost_stats must have {r} entries"):
        ll.low_latency_dispatch(x, idx, MAX_TOKENS, NUM_EXPERTS,
                                dispatch_wait_recv_cost_stats=torch.zeros(r + 1, dtype=torch.int64, device=dev))
    recv, _, handle, _, _ = ll.low_latency_dispatch(x, idx, MAX_TOKENS, NUM_EXPERTS, use_fp8=False)
    c = ll.low_latency_combine
    for bad, what in [(torch.zeros(max(r - 1, 0), dtype=torch.int64, device=dev), f"must have {r} entries"),
                      (torch.zeros(r, dtype=torch.int32, device=dev), "must have dtype"),
                      (torch.zeros(r, dtype=torch.int64), "must be on")]:
        with pytest.raises(ValueError, match=f"combine_wait_recv_cost_stats {what}"):
            c(recv, idx, w, handle, combine_wait_recv_cost_stats=bad)
    stats = torch.zeros(r, dtype=torch.int64, device=dev)
    out, _, _ = c(recv, idx, w, handle, combine_wait_recv_cost_stats=stats)
    torch.cuda.synchronize()
    assert calc_diff(out.float(), x.float() * (w * (idx >= 0)).sum(dim=1, keepdim=True)) < 5e-6
    assert bool((stats >= 0).all())
