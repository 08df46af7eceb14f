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
