#!/usr/bin/env bash
# Install everything simnic needs to build, test and run its demo, from
# Debian 12's packages. Idempotent: packages already present are skipped.
# Runs as root (or through sudo when available).
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  clang-14 libfuzzer-14-dev libclang-rt-14-dev
  # hardware modelling
  libsystemc-dev verilator
  # RDMA userspace: libibverbs and librdmacm with the tools users run
  libibverbs-dev librdmacm-dev ibverbs-utils ibverbs-providers rdmacm-utils perftest
  infiniband-diags
  # UCX and Open MPI over simnic devices (testbench/system/test_ucx.sh, test_mpi.sh)
  ucx-utils openmpi-bin libopenmpi-dev
  # tests, captures and libraries
  catch2 libpcap-dev zlib1g-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
  tshark tcpdump iproute2 python3
  # pgrep and pkill, which the system tests and the demo's test use
  procps
  # a hung daemon's thread stacks in a failed system test (eu-stack)
  elfutils
  # simnic doctor's test: the tutorial's firewall rule on UDP 4791 (iptables, nft)
  iptables nftables
  # the kernel-rxe reference rig (testbench/rig): QEMU and the initramfs tools;
  # the rig downloads the kernel package itself, into its cache
  qemu-system-x86 busybox-static kmod cpio
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "setup: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
