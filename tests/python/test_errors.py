# Bad calls raise shoal.core.ShoalError naming the call and the argument; none stops the job.
import os
import subprocess
import sys

import numpy as np
import pytest

import shoal.core as sc

WORLD = sc.Teams.TEAM_WORLD


@pytest.fixture
def sym():
    a = sc.array(4, "int32")
    b = sc.array(4, "float32")
    yield a, b
    sc.barrier_all()
    sc.free_array(b)
    sc.free_array(a)


def test_error_is_a_runtime_error():
    assert issubclass(sc.ShoalError, RuntimeError)


def test_put_to_a_non_symmetric_dst_names_call_and_argument(sym):
    with pytest.raises(sc.ShoalError, match=r"shoal\.core\.put: dst is not on the symmetric heap"):
        sc.put(np.zeros(4, np.int32), np.zeros(4, np.int32), 0)


def test_put_to_a_bad_pe(sym, npes):
    a, _ = sym
    with pytest.raises(sc.ShoalError, match=rf"put: remote_pe={npes} is out of range"):
        sc.put(a, np.zeros(4, np.int32), npes)


def test_library_check_raises_instead_of_stopping_the_job(sym, npes):
    a, _ = sym
    src = np.zeros(4, np.int32)
    with pytest.raises(sc.ShoalError, match=rf"shoal_putmem: pe={npes + 3}"):
        sc._core.putmem(a.__array_interface__["data"][0], src.__array_interface__["data"][0], 16, npes + 3)
    sc.put(a, src, 0)  # the library still works after the error


def test_get_into_a_too_small_dst(sym):
    a, _ = sym
    with pytest.raises(sc.ShoalError, match=r"get: src has 16 bytes, more than dst.s 8"):
        sc.get(np.zeros(2, np.int32), a, 0)


def test_reduce_dtype_mismatch(sym):
    a, b = sym
    with pytest.raises(sc.ShoalError, match=r"reduce: dst dtype int32 differs from src dtype float32"):
        sc.reduce(WORLD, a, b, "sum")


def test_reduce_bad_op(sym):
    _, b = sym
    with pytest.raises(sc.ShoalError, match=r"reduce: op='xor' is not one of"):
        sc.reduce(WORLD, b, b, "xor")


def test_stream_rejected_on_host_heap(sym):
    a, _ = sym
    with pytest.raises(sc.ShoalError, match=r"put: stream=.*host"):
        sc.put(a, np.zeros(4, np.int32), 0, stream=1)


def test_bad_team_handle_raises_from_the_library():
    with pytest.raises(sc.ShoalError, match=r"team"):
        sc.team_n_pes(62)  # a slot of the team table no split has made (63 is SHOALX_TEAM_SAME_MYPE_NODE)


def test_double_free_raises(sym):
    c = sc.array(2, "int8")
    sc.free_array(c)
    with pytest.raises(sc.ShoalError, match=r"free_array: a is not an array from shoal.core.array"):
        sc.free_array(c)


def test_array_bad_dtype_and_shape():
    with pytest.raises(sc.ShoalError, match=r"array: dtype='nope'"):
        sc.array(4, "nope")
    with pytest.raises(sc.ShoalError, match=r"array: shape=\(-1,\)"):
        sc.array((-1,), "int32")


def test_call_before_init_raises(me):
    if me != 0:
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOAL")}
    code = "import shoal.core as sc\ntry:\n  sc.my_pe()\nexcept sc.ShoalError as e:\n  print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert "shoal.core.my_pe: shoal is not initialized" in out.stdout, out.stdout + out.stderr


def test_mismatched_collectives_raise_on_every_pe_and_the_job_goes_on(me, npes):
    a = sc.array(4, "int32")
    with pytest.raises(sc.ShoalError, match=r"PE \d+ called shoal_malloc .* while PE 0 called shoal_free"):
        if me == 0:
            sc.free_array(a)
        else:
            sc.array(8, "int32")
    sc.barrier_all()  # the job is still usable
    sc.free_array(a)  # PE 0's failed free kept the block: every PE frees it now, matched


def _no_launcher_env():
    # SHOAL_BACKEND stays: these jobs use numpy arrays, so the heap must stay in host memory.
    return {k: v for k, v in os.environ.items() if k == "SHOAL_BACKEND" or
            (not k.startswith(("SHOAL", "OMPI_", "PMI_", "SLURM_")) and k not in ("RANK", "WORLD_SIZE"))}


def test_init_with_uid_rank_nranks(me, tmp_path):
    if me != 0:
        return
    job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "uid_init.py")
    uid_file = str(tmp_path / "uid")
    procs = [subprocess.Popen([sys.executable, job, str(r), "2", uid_file], env=_no_launcher_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0 and f"uid_init rank {r} ok" in out, out


def test_init_argument_errors(me):
    with pytest.raises(sc.ShoalError, match=r"init: already initialized"):
        sc.init()
    if me != 0:
        return
    code = ("import shoal.core as sc\n"
            "for kw in (dict(uid=b'x', rank=0), dict(mpi_comm=object()), dict(initializer_method='mpi')):\n"
            "  try:\n    sc.init(**kw)\n  except sc.ShoalError as e:\n    print(e)\n"
            "try:\n  sc.init(uid=b'short', rank=0, nranks=2)\nexcept sc.ShoalError as e:\n  print(e)\n"
            "print(sc.is_initialized())\n")
    out = subprocess.run([sys.executable, "-c", code], env=_no_launcher_env(), capture_output=True, text=True,
                         timeout=30)
    text = out.stdout + out.stderr
    assert "init: uid, rank and nranks go together; nranks missing" in text, text
    assert "init: mpi_comm: not supported" in text, text
    assert "init: initializer_method='mpi'" in text, text
    assert "uid has 5 bytes, not 128" in text, text
    assert text.rstrip().endswith("False"), text


def test_team_arguments_must_be_ints(sym):
    a, _ = sym
    for bad in (True, 0.0, "0", None):
        with pytest.raises(sc.ShoalError, match=r"shoal\.core\.team_n_pes: team=.* is not a team handle"):
            sc.team_n_pes(bad)
    with pytest.raises(sc.ShoalError, match=r"shoal\.core\.barrier: team=1\.5 is not a team handle"):
        sc.barrier(1.5)
    with pytest.raises(sc.ShoalError, match=r"shoal\.core\.fcollect: team='world' is not a team handle"):
        sc.fcollect("world", a, a)
    with pytest.raises(sc.ShoalError, match=r"team_translate_pe: src_pe='0' must be an int"):
        sc.team_translate_pe(WORLD, "0", WORLD)
    with pytest.raises(sc.ShoalError, match=r"team_translate_pe: dest_team=None is not a team handle"):
        sc.team_translate_pe(WORLD, 0, None)
    with pytest.raises(sc.ShoalError, match=r"team_split_strided: stride=1\.0 must be an int"):
        sc.team_split_strided(WORLD, 0, 1.0, 1)
    with pytest.raises(sc.ShoalError, match=r"team_split_strided: parent_team=False is not a team handle"):
        sc.team_split_strided(False, 0, 1, 1)
    assert sc.team_n_pes(np.int64(0)) == sc.n_pes()  # numpy ints and Teams members are handles


def test_broadcast_root_is_checked(sym, npes):
    a, _ = sym
    with pytest.raises(sc.ShoalError, match=rf"shoal\.core\.broadcast: root={npes} is out of range \[0, {npes}\)"):
        sc.broadcast(WORLD, a, a, root=npes)
    with pytest.raises(sc.ShoalError, match=r"shoal\.core\.broadcast: root=-1 is out of range"):
        sc.broadcast(WORLD, a, a, root=-1)
    with pytest.raises(sc.ShoalError, match=r"shoal\.core\.broadcast: root='0' must be an int"):
        sc.broadcast(WORLD, a, a, root="0")
    sc.barrier_all()  # nothing collective was started: the job goes on
