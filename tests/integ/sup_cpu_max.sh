#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_cpu_max.sh: [service] cpu_max_pct (supervisor/cgroup.c), a
# ceiling on a service's CPU that a spinning service cannot pass:
#   - driver-a with cpu_max_pct = 20 runs in its own cgroup,
#     ringrouter/INSTANCE/driver-a of the cpu hierarchy, and so does its warm
#     standby; the router (no limit) does not; driver-a's nice -5 is its
#     cgroup's weight (v1 cpu.shares 3121, v2 cpu.weight.nice -5), since
#     in a cgroup of its own it competes with the group's;
#   - `inject driver-a slow 5000 1500` makes it spin 5 ms a loop for 1.5 s:
#     its cgroup is throttled (status --json: cpu_throttled > 0) and the
#     CPU it took over the fault stays under half of one CPU (the kernel
#     holds it to 20 %; without a limit it takes all of one);
#   - its successor after a kill -9 is in the same cgroup;
#   - driver-b (no limit; a stand-in that dies 1 s after its start while a
#     file exists)
#     restarting in a loop is in its cgroup with a quota of 2.5 ms per 10 ms
#     ([router] restart_cpu_max_pct, 25 by default), and the log says so;
#     once it starts for good and is stable, it is out of it again;
#   - a clean stop removes the cgroups it made.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_cpu_max

# cg PID: the path of PID's cgroup in the hierarchy with the cpu controller
# (v1 "cpu", or v2's "0::").
cg() { awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3; f = 1 } $1 == 0 && !f { v2 = $3 } END { if (!f) print v2 }' \
    "/proc/$1/cgroup"; }
# ticks PID: its user + system CPU time so far, in clock ticks.
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
throttled() {
    "$RR" status --json -S "$SUP_SOCK" | python3 -c '
import json, sys
print(next(v["cpu_throttled"] for v in json.load(sys.stdin)["services"] if v["name"] == "driver-a"))'
}

# limit DIR: its quota and period as cpu.max says them (v1: quota -1 is max).
limit() {
    if [ -f "$1/cpu.max" ]; then cat "$1/cpu.max"; else
        echo "$(sed 's/^-1$/max/' "$1/cpu.cfs_quota_us") $(cat "$1/cpu.cfs_period_us")"; fi
}
sup_netns
cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-crashy" || sup_fail "cannot copy rr-null"
sup_manifest "$SUP_T/m.ini" driver-a.cpu_max_pct=20 driver-a.nice=-5 driver-b.binary="$SUP_T/bin/rr-null-crashy"
sup_start "$SUP_NS" "$SUP_T/m.ini"
sup_wait 5 eval 'sup_status && [ "${SUP_STANDBY[driver-a]:--}" != - ]' || sup_fail "driver-a has no standby"
a=${SUP_PIDS[driver-a]} r=${SUP_PIDS[router]} sb=${SUP_STANDBY[driver-a]%\*}
inst=$(printf '%s' "${SUP_T#/}/run" | tr / -)
want="/ringrouter/$inst/driver-a"
[ "$(cg "$a")" = "$want" ] || sup_fail "driver-a (cpu_max_pct = 20) is in cgroup $(cg "$a"), not $want"
[ "$(cg "$sb")" = "$want" ] || sup_fail "driver-a's standby (pid $sb) is in cgroup $(cg "$sb"), not $want"
case $(cg "$r") in /ringrouter/*) sup_fail "the router (no limit) is in cgroup $(cg "$r")" ;; esac
dir=$(awk '{ for (i = 7; $i != "-"; i++); if ($(i + 1) == "cgroup2" || ($(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)cpu(,|$)/)) print $5 }' \
    /proc/self/mountinfo |
    while read -r m; do [ -d "$m$want" ] && echo "$m$want"; done | head -1)
[ -n "$dir" ] || sup_fail "no directory $want in any cgroup hierarchy"
lim=$(limit "$dir")
[ "$lim" = "2000 10000" ] || sup_fail "driver-a's limit is \"$lim\", not 2 ms of each 10 ms"
if [ -f "$dir/cpu.weight.nice" ]; then wt=$(cat "$dir/cpu.weight.nice") wwant=-5; else wt=$(cat "$dir/cpu.shares") wwant=3121; fi
[ "$wt" = "$wwant" ] || sup_fail "driver-a (nice -5)'s cgroup weight is $wt, not $wwant"
echo "ok: driver-a and its standby in $want ($lim, weight $wt), the router elsewhere"

[ "$(throttled)" = 0 ] || echo "note: driver-a throttled $(throttled) times before the fault"
t0=$(throttled) c0=$(ticks "$a") w0=$(date +%s%N)
"$RR" inject -S "$SUP_SOCK" driver-a slow 5000 1500 >"$SUP_T/inj.out" 2>&1 || sup_fail "inject slow: $(cat "$SUP_T/inj.out")"
sup_wait 5 eval '[ "$(throttled)" -gt "$t0" ]' || sup_fail "driver-a spun and its cgroup was never throttled"
sleep 1.6 # the rest of the fault's 1.5 s; its own length, not a wait on a condition
c1=$(ticks "$a") w1=$(date +%s%N)
hz=$(getconf CLK_TCK)
used=$(((c1 - c0) * 1000 / hz)) wall=$(((w1 - w0) / 1000000))
[ $((used * 2)) -lt "$wall" ] || sup_fail "driver-a took $used ms of CPU in $wall ms while limited to 20 %"
sup_status && [ "${SUP_PIDS[driver-a]}" = "$a" ] || sup_fail "driver-a was restarted by its slow loop"
echo "ok: spinning, driver-a was throttled $(($(throttled) - t0)) times and took $used ms of CPU in $wall ms"

kill -KILL "$a"
sup_wait 5 eval 'sup_status && [ "${SUP_PIDS[driver-a]}" != "$a" ] && [ "${SUP_STATE[driver-a]}" = up ]' ||
    sup_fail "driver-a was not up again within 5 s of its kill"
a2=${SUP_PIDS[driver-a]}
[ "$(cg "$a2")" = "$want" ] || sup_fail "driver-a's successor (pid $a2) is in cgroup $(cg "$a2")"
echo "ok: driver-a's successor, pid $a2, in $want too"

bdir=${dir%/driver-a}/driver-b
touch "$SUP_T/bin/rr-null-crashy.crash"
# Its parked standby (exec'd before the file) takes over the first kill;
# from the second on, every new instance dies at once.
b=${SUP_PIDS[driver-b]}
kill -KILL "$b"
sup_wait 10 eval 'sup_status && [ "${SUP_PIDS[driver-b]}" != "$b" ] && [ "${SUP_STATE[driver-b]}" = up ]' ||
    sup_fail "driver-b was not up again within 10 s of its kill"
kill -KILL "${SUP_PIDS[driver-b]}"
sup_wait 10 eval 'grep -q "driver-b: restarting in a loop: at most 25 % of a CPU until it is stable" "$SUP_LOG"' ||
    sup_fail "driver-b, dying at once, was not held to a quota within 10 s"
[ "$(limit "$bdir")" = "2500 10000" ] || sup_fail "driver-b restarting in a loop: its limit is $(limit "$bdir")"
# The instance alive now (a new one each death) is in it.
sup_wait 10 eval 'sup_status && p=${SUP_PIDS[driver-b]} && [[ $p =~ ^[1-9][0-9]*$ ]] && [ "$(cg "$p" 2>/dev/null)" = "${want%/driver-a}/driver-b" ]' ||
    sup_fail "no instance of driver-b seen in ${want%/driver-a}/driver-b within 10 s"
echo "ok: driver-b restarting in a loop: in ${want%/driver-a}/driver-b, $(limit "$bdir")"
rm "$SUP_T/bin/rr-null-crashy.crash"
sup_wait 10 eval 'grep -q "driver-b: stable again: out of its cgroup" "$SUP_LOG"' ||
    sup_fail "driver-b, up again, was not out of its cgroup within 10 s"
sup_status
case $(cg "${SUP_PIDS[driver-b]}") in /ringrouter/*) sup_fail "driver-b, stable, is in $(cg "${SUP_PIDS[driver-b]}")" ;; esac
echo "ok: driver-b stable again: pid ${SUP_PIDS[driver-b]} in $(cg "${SUP_PIDS[driver-b]}")"
sup_stop
sup_census_ok
[ ! -e "$dir" ] || sup_fail "$dir is still there after a clean stop"
[ ! -e "${dir%/driver-a}" ] || sup_fail "${dir%/driver-a} is still there after a clean stop"
echo "ok: the clean stop removed $want"
echo "PASS sup_cpu_max"
