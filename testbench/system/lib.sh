# Sourced by the system tests that run RDMA applications against a private
# simnic daemon as an ordinary user. After `. lib.sh`:
#
#   sys_init NAME VAR...   a work directory /tmp/simnic-NAME.XXXXXX ($work,
#                          removed by sys_cleanup) with a runtime directory
#                          $work/rt; when root (CI is), every file named by a
#                          VAR (SIMNIC, LIB, test programs) is copied there
#                          and VAR rewritten, so that `nobody` can run it,
#                          and AS becomes the setpriv prefix that drops to
#                          nobody. Exports SIMNIC_RUNTIME_DIR and
#                          SIMNIC_VERBS_LIB (from $LIB).
#   sys_dir DIR...         more directories under $work, writable by whoever
#                          the test runs as.
#   sim ARGS...            the simnic CLI, as that user.
#   fail MESSAGE           counts a failed check ($failures).
#   sys_cleanup            stops the private daemon and removes $work
#                          (call it from the test's EXIT trap).
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

sys_init() {
  local name=$1 var f
  shift
  work=$(mktemp -d "/tmp/simnic-$name.XXXXXX")
  chmod 755 "$work"
  AS=()
  if [ "$(id -u)" -eq 0 ]; then
    for var in "$@"; do
      f=${!var}
      cp "$f" "$work/$(basename "$f")"
      chmod 755 "$work/$(basename "$f")"
      printf -v "$var" '%s' "$work/$(basename "$f")"
    done
    AS=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
  fi
  sys_dir rt
  export SIMNIC_RUNTIME_DIR=$work/rt SIMNIC_VERBS_LIB=$LIB
}

sys_dir() {
  local d
  for d in "$@"; do
    mkdir -m 700 "$work/$d"
    [ "$(id -u)" -eq 0 ] && chown nobody:nogroup "$work/$d"
  done
  return 0
}

sim() { "${AS[@]}" "$SIMNIC" "$@"; }

sys_cleanup() {
  if [ -f "$SIMNIC_RUNTIME_DIR/simnicd.state" ]; then
    local pid
    pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SIMNIC_RUNTIME_DIR/simnicd.state")
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
  fi
  rm -rf "$work"
}
