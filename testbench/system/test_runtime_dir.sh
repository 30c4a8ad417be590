#!/usr/bin/env bash
# simnic as a user without XDG_RUNTIME_DIR (su - user, cron, many CI
# containers; issue 12): the runtime directory falls back to a private one of
# the user's own, ${TMPDIR:-/tmp}/simnic-UID, checked before every use as
# tmux checks its socket directory, and `simnic exec` says what is missing
# before the application starts. As an ordinary user: the script drops to
# nobody when run as root (lib.sh). TMPDIR points into the test's own
# directory, so that the fallback is private to the test.
#
#   test_runtime_dir.sh SIMNIC LIBSIMNIC_VERBS
set -u
SIMNIC=$1 LIB=$2
DEV=rtd_lo
. "$(dirname "$0")/lib.sh"
sys_init rtdir SIMNIC LIB
unset SIMNIC_RUNTIME_DIR XDG_RUNTIME_DIR
mkdir -m 1777 "$work/tmp"  # a /tmp of the test's own
uid=$("${AS[@]}" id -u)
fallback=$work/tmp/simnic-$uid
# The user's environment: no XDG_RUNTIME_DIR, no SIMNIC_RUNTIME_DIR.
as_user() { "${AS[@]}" env -u XDG_RUNTIME_DIR -u SIMNIC_RUNTIME_DIR TMPDIR="$work/tmp" "$@"; }
sim() { as_user "$SIMNIC" "$@"; }

cleanup() {
  sim daemon --stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# expect RC PATTERN CMD...: CMD exits RC and its output matches PATTERN.
expect() {
  local rc=$1 pat=$2; shift 2
  out=$("$@" 2>&1); local got=$?
  [ "$got" -eq "$rc" ] || fail "'$*' exited $got, expected $rc: $out"
  [[ "$out" =~ $pat ]] || fail "'$*' printed '$out', expected /$pat/"
}

# 1. The fallback works: created 0700, the user's, and everything uses it.
expect 0 '^$' sim link add "$DEV" type soft netdev lo
[ -d "$fallback" ] && [ ! -L "$fallback" ] || fail "no directory $fallback"
[ "$(stat -c '%a %u' "$fallback")" = "700 $uid" ] || fail "$fallback is $(stat -c '%a %u' "$fallback"), not 700 $uid"
[ -S "$fallback/simnicd.sock" ] || fail "no socket in $fallback"
expect 0 "^link $DEV/1 state ACTIVE" sim link show
expect 0 "hca_id:[[:space:]]+$DEV" sim exec -- ibv_devinfo -d "$DEV"
# An application run with the provider but without simnic exec finds it too.
expect 0 "hca_id:[[:space:]]+$DEV" as_user env LD_PRELOAD="$LIB" ibv_devinfo -d "$DEV"

# 2. simnic exec says what is missing before the application starts.
expect 1 "names device nosuch0, which does not exist \\(simnic devices: $DEV\\)" \
  sim exec -- ibv_devinfo -d nosuch0
[[ "$out" == *hca_id* ]] && fail "ibv_devinfo ran for a device that does not exist"
expect 1 "names device nosuch0" sim exec -- ib_write_bw --ib-dev=nosuch0
expect 0 '^$' sim link delete "$DEV"
expect 1 "names device $DEV, which does not exist \(simnic devices: none\)" sim exec -- ibv_devinfo -d "$DEV"
sim daemon --stop
for _ in $(seq 50); do [ -S "$fallback/simnicd.sock" ] || break; sleep 0.1; done
expect 1 "no simnic daemon is running \\(runtime directory $fallback\\)" sim exec -- sh -c "touch '$work/tmp/ran'"
[ -e "$work/tmp/ran" ] && fail "simnic exec ran the command with no daemon"
# --no-check runs it anyway; an application with the provider and no daemon
# hears ENODEV (no such device), not ENOSYS.
expect 0 '' sim exec --no-check -- sh -c "touch '$work/tmp/ran'"
[ -e "$work/tmp/ran" ] || fail "simnic exec --no-check did not run the command"
expect 255 "Failed to get IB devices list: No such device" as_user env LD_PRELOAD="$LIB" ibv_devinfo
[[ "$out" == *"Function not implemented"* ]] && fail "ENOSYS with the provider and no daemon"

# 3. A fallback that is not the user's alone is refused, with why, and
#    nothing starts in it.
refused() {  # WHAT PATTERN
  expect 1 "$2" sim link add "$DEV" type soft netdev lo
  [ -e "$fallback/simnicd.sock" ] && fail "$1: a daemon started in it"
  expect 1 "$2" sim exec -- ibv_devinfo
  expect 1 "$2" sim link show
}
rm -rf "$fallback"
mkdir "$work/elsewhere"; chmod 777 "$work/elsewhere"
ln -s "$work/elsewhere" "$fallback"
refused "a symlink" "runtime directory $fallback is a symbolic link; refusing it"
rm -f "$fallback"
"${AS[@]}" mkdir -m 755 "$fallback"
refused "mode 0755" "runtime directory $fallback has mode 0755: others can reach it; refusing it"
rmdir "$fallback"
if [ "$(id -u)" -eq 0 ]; then
  mkdir -m 700 "$fallback"  # root's, in nobody's place
  refused "someone else's" "runtime directory $fallback belongs to uid 0, not to you \\(uid $uid\\); refusing it"
  rmdir "$fallback"
fi
touch "$fallback"
refused "a file" "runtime directory $fallback is not a directory"
rm -f "$fallback"
# Once it is gone, the user's own is made again.
expect 0 '^$' sim link add "$DEV" type soft netdev lo
expect 0 '^$' sim link delete "$DEV"

if [ "$failures" -ne 0 ]; then
  echo "runtime directory: $failures checks failed"
  exit 1
fi
echo "runtime directory ($fallback): passed"
