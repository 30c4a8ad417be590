#!/usr/bin/env bash
# `simnic exec` hands CMD its arguments byte for byte, whatever they hold:
# brackets and commas (CLI11's list syntax), quotes, spaces, empty words,
# "--", leading dashes, exec's own option names; with and without the "--"
# before CMD. No daemon is needed (--no-check).
#   test_exec_args.sh SIMNIC PROVIDER_LIB
set -u
SIMNIC=$1
export SIMNIC_VERBS_LIB=$2
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
status=0
words=("[x]" "[a,b]" "a,b" "[]" "[" "]" "" " two words " "--" "-x" "--no-check" "--print-env" '"q"' "'s'"
       "x=[1,2]" "{a}" $'line\nbreak' "-" "*[max_ah]")
# check NAME EXEC_WORDS...: CMD is printf '%s\0' WORDS; its output must be
# the words as given, each ended by a NUL.
check() {
  local name=$1; shift
  printf '%s\0' "${words[@]}" >"$work/want"
  "$SIMNIC" "$@" printf '%s\0' "${words[@]}" >"$work/got"
  local rc=$?
  if [ $rc -ne 0 ] || ! cmp -s "$work/want" "$work/got"; then
    echo "FAIL $name (exit $rc): wanted, then got:"
    tr '\0' '|' <"$work/want"; echo
    tr '\0' '|' <"$work/got"; echo
    status=1
  else
    echo "ok   $name"
  fi
}
check "exec -- CMD" exec --no-check --
check "exec CMD (no --)" exec --no-check
check "exec -- env CMD" exec --no-check -- env
exit $status
