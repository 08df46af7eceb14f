# shoal.ep's buffer arithmetic on the CPU: the sizes Python asks for (shoal.ep.config) against the
# capacity the kernels compute (shoal._ep, i.e. shoal_ep::slot_capacity), with and without the staging
# slabs of the proxy path. No collective call, no GPU (collected by python_core_test under shoalrun).
import pytest

ep = pytest.importorskip("shoal._ep")

from shoal.ep.config import (CONTROL_NBYTES, combine_slot_nbytes, dispatch_slot_nbytes,  # noqa: E402
                             nvl_bytes_needed, num_slabs)

CASES = [(4096, 7168, 2, 8, False), (4096, 7168, 4, 8, True), (1, 128, 2, 1, True), (300, 2048, 8, 32, False),
         (300, 2048, 8, 32, True), (17, 4096, 3, 4, True)]


def test_constants_and_slots_match_the_kernels():
    assert CONTROL_NBYTES == ep.control_nbytes
    for hidden_nbytes, num_scales, num_topk in [(256, 0, 0), (7168, 56, 8), (14336, 0, 32), (16, 1, 1)]:
        assert dispatch_slot_nbytes(hidden_nbytes, num_scales, num_topk) == \
            ep.dispatch_slot_nbytes(hidden_nbytes, num_scales, num_topk)
    for hidden, num_topk in [(8, 0), (7168, 8), (2048, 32)]:
        assert combine_slot_nbytes(hidden, num_topk) == ep.combine_slot_nbytes(hidden, num_topk)
    for num_ranks in range(1, ep.max_ranks + 1):
        for staged in (False, True):
            assert num_slabs(num_ranks, staged) == ep.num_slabs(num_ranks, staged)


@pytest.mark.parametrize("num_tokens,hidden,num_ranks,num_topk,proxy", CASES)
def test_nvl_bytes_needed_is_exactly_enough(num_tokens, hidden, num_ranks, num_topk, proxy):
    """The kernels fit num_tokens slots per slab in nvl_bytes_needed(...) bytes, and not one byte less."""
    need = nvl_bytes_needed(num_tokens, hidden, num_ranks, num_topk=num_topk, proxy=proxy)
    slots = [dispatch_slot_nbytes(2 * hidden, 0, num_topk), combine_slot_nbytes(hidden, num_topk)]
    for slot in slots:
        assert ep.slot_capacity(need, num_ranks, slot, proxy) >= num_tokens
    assert min(ep.slot_capacity(need - 1, num_ranks, slot, proxy) for slot in slots) < num_tokens


def test_staging_costs_r_minus_1_slabs():
    plain = nvl_bytes_needed(4096, 7168, 4, num_topk=8)
    staged = nvl_bytes_needed(4096, 7168, 4, num_topk=8, proxy=True)
    assert (staged - CONTROL_NBYTES) * 4 == (plain - CONTROL_NBYTES) * 7
    # A buffer sized for the direct path holds fewer tokens once staged.
    slot = dispatch_slot_nbytes(2 * 7168, 0, 8)
    assert ep.slot_capacity(plain, 4, slot, True) < 4096 <= ep.slot_capacity(plain, 4, slot, False)


# DeepEP V1's Buffer signatures (deepseek-ai/DeepEP at 567632d, deep_ep/buffer.py): a DeepEP program calls these
# by keyword, so every name and its position must match for the import switch to be enough.
DEEPEP_SIGNATURES = {
    "__init__": ["group", "num_nvl_bytes", "num_rdma_bytes", "low_latency_mode", "num_qps_per_rank",
                 "allow_nvlink_for_low_latency_mode", "allow_mnnvl", "use_fabric", "explicitly_destroy",
                 "enable_shrink", "comm"],
    "get_dispatch_layout": ["topk_idx", "num_experts", "previous_event", "async_finish", "allocate_on_comm_stream"],
    "dispatch": ["x", "handle", "num_tokens_per_rank", "num_tokens_per_rdma_rank", "is_token_in_rank",
                 "num_tokens_per_expert", "topk_idx", "topk_weights", "expert_alignment", "num_worst_tokens", "config",
                 "previous_event", "async_finish", "allocate_on_comm_stream"],
    "combine": ["x", "handle", "topk_weights", "bias", "config", "previous_event", "async_finish",
                "allocate_on_comm_stream"],
    "low_latency_dispatch": ["x", "topk_idx", "num_max_dispatch_tokens_per_rank", "num_experts",
                             "cumulative_local_expert_recv_stats", "dispatch_wait_recv_cost_stats", "use_fp8",
                             "round_scale", "use_ue8m0", "async_finish", "return_recv_hook"],
    "low_latency_combine": ["x", "topk_idx", "topk_weights", "handle", "use_logfmt", "zero_copy", "async_finish",
                            "return_recv_hook", "out", "combine_wait_recv_cost_stats"],
    "get_next_low_latency_combine_buffer": ["handle"],
    "clean_low_latency_buffer": ["num_max_dispatch_tokens_per_rank", "hidden", "num_experts"],
    "get_local_buffer_tensor": ["dtype", "size", "offset", "use_rdma_buffer"],
    "get_comm_stream": [],
    "low_latency_update_mask_buffer": ["rank_to_mask", "mask"],
    "low_latency_query_mask_buffer": ["mask_status"],
    "low_latency_clean_mask_buffer": [],
}


@pytest.mark.parametrize("method", sorted(DEEPEP_SIGNATURES))
def test_buffer_has_deepep_signatures(method):
    import inspect
    from shoal.ep import Buffer
    params = [p for p in inspect.signature(getattr(Buffer, method)).parameters if p != "self"]
    assert params[:len(DEEPEP_SIGNATURES[method])] == DEEPEP_SIGNATURES[method]
    # Anything past DeepEP's parameters is shoal's own and private (never hit by a positional DeepEP call).
    assert all(p.startswith("_") for p in params[len(DEEPEP_SIGNATURES[method]):])


def test_module_names_and_static_helpers():
    import shoal.ep as ep_pkg
    from shoal.ep import Buffer, Config
    for name in ("Buffer", "Config", "EventOverlap", "topk_idx_t"):
        assert name in ep_pkg.__all__
    for name in ("is_sm90_compiled", "set_num_sms", "capture", "get_dispatch_config", "get_combine_config",
                 "get_low_latency_rdma_size_hint"):
        assert callable(getattr(Buffer, name))
    c = Config(24, 6, 256, 6, 128)
    assert (c.num_sms, c.num_max_nvl_chunked_send_tokens, c.num_max_nvl_chunked_recv_tokens) == (24, 6, 256)


def test_check_resident_refuses_what_cannot_all_run():
    """PEs sharing a GPU: every PE's num_sms blocks (one per SM) must fit at once, or receivers spin on SMs the
    peers' senders need. A PE alone on its GPU is never refused; the message names num_sms and its bound."""
    from shoal.ep.config import check_resident
    check_resident("dispatch", 24, 4, 132)  # DeepEP's test_intranode at 4 PEs: 96 blocks
    check_resident("dispatch", 128, 1, 114)  # alone on its GPU: the peers' senders run elsewhere
    check_resident("dispatch", 66, 2, 132)  # exactly full
    with pytest.raises(ValueError, match=r"combine: num_sms=48 on each of 4 PEs.*192 resident blocks.*132 SMs.*"
                                         r"num_sms <= 32"):
        check_resident("combine", 48, 4, 132)


def test_max_resident_num_sms_is_the_bound_check_resident_keeps():
    from shoal.ep.config import check_resident, max_resident_num_sms
    for pes, sms in [(2, 132), (4, 132), (8, 132), (3, 114), (1, 132), (64, 132)]:
        n = max_resident_num_sms(pes, sms)
        assert n >= 2 and n % 2 == 0
        if n * pes <= sms:
            check_resident("dispatch", n, pes, sms)  # fits
        if (n + 2) * pes <= sms:
            raise AssertionError(f"{pes} PEs, {sms} SMs: {n} is not the largest even num_sms that fits")
    assert max_resident_num_sms(8, 132) == 16 and max_resident_num_sms(4, 132) == 32


class _FakeMatrix:
    """Stands for a handle's rank_prefix_matrix (a tensor in real use): carries what notify published."""


def _host_only_buffer(num_ranks, nbytes, staged=False):
    from shoal.ep import Buffer
    buf = Buffer.__new__(Buffer)  # no GPU, no collective: only the fields the host checks read
    buf.group_size, buf.num_nvl_bytes, buf._staged = num_ranks, nbytes, staged
    buf._pes_per_gpu, buf._gpu_sms = 1, 0
    return buf


def test_capacity_check_uses_the_job_wide_count_when_known():
    """A handle from a dispatch that waited for its counts carries the job-wide most tokens one rank sends one
    rank (the same on every rank), so every rank raises alike; a plain token count (num_worst_tokens) is this
    rank's own. Both messages name num_nvl_bytes and the bytes needed."""
    nbytes = nvl_bytes_needed(100, 2048, 2, num_topk=8)
    buf = _host_only_buffer(2, nbytes)
    matrix = _FakeMatrix()
    handle = (matrix, None, None, None, type("T", (), {"shape": (5000, 2)})(), None)
    matrix._shoal_ep_most_sent = 100
    buf._check_capacity("combine", handle, 2048, 4096, 0, 8)  # this rank's T (5000) does not matter
    matrix._shoal_ep_most_sent = 101
    with pytest.raises(ValueError, match=r"combine: num_nvl_bytes=\d+ is too small for a rank sending one rank "
                                         r"101 tokens.*needs at least \d+ bytes"):
        buf._check_capacity("combine", handle, 2048, 4096, 0, 8)
    del matrix._shoal_ep_most_sent  # a num_worst_tokens handle: this rank's T is all that is known
    with pytest.raises(ValueError, match="too small for this rank's 5000 tokens"):
        buf._check_capacity("combine", handle, 2048, 4096, 0, 8)
    buf._check_capacity("dispatch", 100, 2048, 4096, 0, 8)
    with pytest.raises(ValueError, match="this rank's 101 tokens"):
        buf._check_capacity("dispatch", 101, 2048, 4096, 0, 8)


SWITCH_VARS = {"SHOAL_EP_L2_DISCARD": "l2_discard", "SHOAL_EP_SELF_DIRECT": "self_direct",
               "SHOAL_EP_INTERLEAVE": "interleave"}


def test_switches_from_env(monkeypatch):
    """Each switch reads its own variable: unset, empty or 0 is off, 1 on; the others stay as they are."""
    for var in SWITCH_VARS:
        monkeypatch.delenv(var, raising=False)
    sw = ep.switches_from_env()
    assert (sw.l2_discard, sw.self_direct, sw.interleave) == (False, False, False)
    for var, field in SWITCH_VARS.items():
        monkeypatch.setenv(var, "1")
        sw = ep.switches_from_env()
        assert {f: getattr(sw, f) for f in SWITCH_VARS.values()} == {f: f == field for f in SWITCH_VARS.values()}
        monkeypatch.setenv(var, "0" if field != "interleave" else "")
    sw = ep.switches_from_env()
    assert (sw.l2_discard, sw.self_direct, sw.interleave) == (False, False, False)


@pytest.mark.parametrize("value", ["2", "yes", "1 ", "true", "01"])
def test_switches_bad_value_names_the_variable(monkeypatch, value):
    for var in SWITCH_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SHOAL_EP_SELF_DIRECT", value)
    with pytest.raises(ValueError, match=f"SHOAL_EP_SELF_DIRECT must be 0 or 1, not '{value}'"):
        ep.switches_from_env()
