#!/usr/bin/env bash
# Every subcommand exits 2 on bad arguments, as `lapse --help` says: never
# CLI11's own codes (106, 109, ...). Usage: exit_codes.sh LAPSE
set -u
lapse=$1
failures=0
expect() {
    local want=$1; shift
    "$lapse" "$@" >/dev/null 2>&1 </dev/null
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: lapse $* exited $got, expected $want"
        failures=$((failures + 1))
    else
        echo "ok:   lapse $* -> $got"
    fi
}
expect 2                                # no subcommand
expect 2 no-such-subcommand
expect 0 --help
for sub in run info validate report export diff bench; do
    expect 0 "$sub" --help
    expect 2 "$sub" --no-such-option
done
expect 2 info                           # PLUGIN is required
expect 2 validate                       # PLUGIN is required
expect 2 report                         # an input is required
expect 2 diff                           # BASE and NEW are required
expect 2 run --config /nonexistent/lapse.toml
exit $((failures > 0))
