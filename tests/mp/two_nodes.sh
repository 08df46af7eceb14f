#!/bin/sh
# Runs a multi-PE test as a job on two "nodes" of this machine, so that each PE has peers of both
# kinds (a mixed job): the odd ranks enter their own user + UTS namespace with another hostname, so
# shoal puts them on another node and reaches them through the UCX proxy, while PEs of the same
# parity share their heaps (load/store). The test sees MP_TWO_NODES=1.
#   two_nodes.sh run SHOALRUN NUM_PES TIMEOUT PROGRAM   (from CTest; exits 77, a skip, where
#                                                        namespaces are not permitted)
#   two_nodes.sh pe PROGRAM                             (each PE, started by shoalrun)
set -eu
mode=$1
shift
split_off='unshare --user --map-root-user --uts'
if [ "$mode" = run ]; then
  if ! $split_off sh -c 'hostname shoal-two-nodes-probe' 2>/dev/null; then
    echo "SKIP: user and UTS namespaces are not permitted here ($split_off failed)"
    exit 77
  fi
  shoalrun=$1 num_pes=$2 timeout=$3 program=$4
  exec "$shoalrun" -n "$num_pes" --timeout "$timeout" -- "$0" pe "$program"
fi
export MP_TWO_NODES=1
if [ $((SHOAL_RANK % 2)) -eq 1 ]; then
  exec $split_off sh -c 'hostname "$(hostname)-node-b" && exec "$0"' "$1"
fi
exec "$1"
