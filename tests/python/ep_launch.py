"""Runs a pytest file of shoal.ep on N PEs through torchrun (the ctest fixture of the ep tests).

usage: ep_launch.py N TEST_FILE [pytest args...]
Exits 77 (ctest's skip code) when torch or a CUDA device is missing. The PEs may share one GPU (MPS).
torchrun's store takes MASTER_PORT and shoal's bootstrap MASTER_PORT+1 (src/bootstrap/launch_env.cc),
so the port is chosen with both free."""
import os
import socket
import subprocess
import sys


def free_port_pair() -> int:
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            try:
                with socket.socket() as b:
                    b.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise RuntimeError("ep_launch: no free pair of ports on 127.0.0.1")


def why_no_torch_cuda():
    """Why the GPU jobs of these tests cannot run here (no torch, or no CUDA device), or None when they can."""
    try:
        import torch
    except ImportError:
        return "no torch"
    return None if torch.cuda.is_available() else "no CUDA device"


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    nprocs, test_file, extra = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    missing = why_no_torch_cuda()
    if missing is not None:
        print(f"ep_launch: SKIP ({missing})")
        return 77
    env = dict(os.environ, SHOAL_EP_TIMEOUT_S=os.environ.get("SHOAL_EP_TIMEOUT_S", "60"))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nprocs}", "--nnodes=1",
           "--master_addr=127.0.0.1", f"--master_port={free_port_pair()}", "-m", "pytest", "-q", "-x",
           "-p", "no:cacheprovider", "--color=no", test_file, *extra]
    return subprocess.run(cmd, env=env, timeout=900).returncode


if __name__ == "__main__":
    sys.exit(main())
