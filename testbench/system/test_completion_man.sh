#!/usr/bin/env bash
# `simnic completion bash` and `simnic man` (issue 16, everyday
# conveniences): the completion completes commands, subcommands, options and
# the daemon's device names; the manual page renders and has a section for
# every command, from the commands' own help. In a network namespace of its
# own (a device on lo), and a user namespace when not root.
#   test_completion_man.sh SIMNIC
set -u
. "$(dirname "$0")/lib.sh"
own_netns "$@"
SIMNIC=$1
sys_init --as-caller shell
ip link set lo up
trap '"$SIMNIC" daemon --stop >/dev/null 2>&1; rm -rf "$work"' EXIT
# The completion calls `simnic` by name.
mkdir "$work/bin" && ln -s "$SIMNIC" "$work/bin/simnic" && export PATH=$work/bin:$PATH

"$SIMNIC" completion bash >"$work/simnic.bash" || fail "simnic completion bash"
. "$work/simnic.bash"
# complete WORDS...: what bash offers for the last word (empty: a new word).
complete_words() {
  COMP_WORDS=(simnic "$@")
  COMP_CWORD=$#
  _simnic
  echo "${COMPREPLY[*]}"
}
expect() {
  local want=$1 got
  shift
  got=$(complete_words "$@")
  [ "$got" = "$want" ] || fail "completing 'simnic $*': '$got', expected '$want'"
}
expect "link" li
expect "doctor" doc
expect "add show delete --help -h" link ""
expect "--help --json --peer --probe-timeout" doctor --
expect "show" resource s
"$SIMNIC" link add rxe_lo type soft netdev lo || fail "link add"
expect "rxe_lo" doctor rx
expect "--help -h --json -j --reset rxe_lo" stats ""
expect "rxe_lo" link show r
"$SIMNIC" completion zsh >/dev/null 2>&1 && fail "completion zsh did not fail"

"$SIMNIC" man >"$work/simnic.1" || fail "simnic man"
page=$(MANWIDTH=100 man -l "$work/simnic.1" 2>&1) || fail "man -l: $page"
for c in "simnic doctor" "simnic link add" "simnic link show" "simnic exec" "simnic resource show" \
         "simnic bench" "simnic pcap" "simnic completion"; do
  grep -q "^   $c\$" <<<"$page" || fail "no section '$c' in the manual page"
done
grep -q -- '--peer TEXT' <<<"$page" || fail "doctor's --peer is not in the manual page"
sys_finish cli.completion_man
