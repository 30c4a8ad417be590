#!/usr/bin/env bash
# Open MPI 4.1 over UCX on a simnic device on lo, as an ordinary user (the
# script drops to nobody under root).
#
#   test_mpi.sh NP SIMNIC LIBSIMNIC_VERBS MPI_APP
#
# mpirun -np NP runs mpi_app (ping-pong between rank 0 and each rank, 1 B to
# 4 MiB, every byte checked; an allreduce; one-sided put and get) with
# Open MPI's UCX PML and OSC, UCX restricted to the device's rc_verbs and
# ud_verbs (no shared memory: the ranks' traffic goes through the device),
# UCX_UD_VERBS_ETH_DGID_CHECK=n as over kernel rxe (test_ucx.sh says why).
# LD_PRELOAD reaches every rank through mpirun's environment. Checks: the
# program's "ok", traffic through the device, and nothing left on it after.
set -u
NP=$1 SIMNIC=$2 LIB=$3 MPI_APP=$4
DEV=simmpi_lo
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "mpirun not installed (apt-get install openmpi-bin)"; exit 1; }
sys_init mpi SIMNIC LIB MPI_APP
sys_dir home
trap 'sys_cleanup' EXIT

link_add "$DEV"
root=()
[ "$(id -u)" -eq 0 ] && [ ${#AS[@]} -eq 0 ] && root=(--allow-run-as-root)
packets() { sim stats "$DEV" 2>/dev/null | awk '$1 == "rx_packets" {print $2}'; }
before=$(packets)

HOME=$work/home UCX_NET_DEVICES=$DEV:1 UCX_TLS=rc_verbs,ud_verbs,self UCX_UD_VERBS_ETH_DGID_CHECK=n \
  app timeout 150 mpirun "${root[@]}" --oversubscribe -np "$NP" \
  --mca pml ucx --mca osc ucx --mca btl '^vader,tcp,openib,uct' \
  -x LD_PRELOAD -x SIMNIC_RUNTIME_DIR -x HOME -x UCX_NET_DEVICES -x UCX_TLS -x UCX_UD_VERBS_ETH_DGID_CHECK \
  "$MPI_APP" >"$work/mpi.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { fail "mpirun exited $rc"; sim stats "$DEV" | grep -v ' 0$'; }
grep -q '^mpi_app: ok$' "$work/mpi.out" || fail "mpi_app did not finish"
[ "$(grep -c '^pingpong ' "$work/mpi.out")" -eq 12 ] || fail "not every ping-pong size ran"
after=$(packets)
[ $((after - before)) -ge 1000 ] || fail "the device received $((after - before)) packets: the ranks did not use it"

for _ in $(seq 50); do
  sim resource show -j 2>&1 | grep -Eq '"contexts":0[,}]' && break
  sleep 0.1
done
nothing_left "after mpirun" qps cqs mrs pds
cat "$work/mpi.out"
sys_finish "mpi.np$NP"
