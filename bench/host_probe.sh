# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# bench/host_probe.sh, sourced by bench/forward and bench/forward-tap: how
# busy the host is, from inside this guest, at the start and the end of a
# run. On this 2-vCPU guest what a system call and a switch cost moves with
# the load of the other guests on the host (bench/README.md, "Output"),
# and ringrouter's path, which
# has more of both than Linux's, moves most. The two figures let a reader
# tell a run on a busy host from one on a quiet host.
#
# host_probe CPU: prints "SYSCALL_NS HOP_US", from bench_switch (a getppid
# and a hop between two processes, both on CPU), or "nan nan".
# A probe that fails must not end the bench (set -e and pipefail there).
host_probe() {
    { build/bin/bench_switch -c "$1" -r 1 -n 20000 PP 2>/dev/null || true; } |
        awk '/^syscall_ns / {s = $2} /^PP / {h = $4} END {print (s ? s : "nan"), (h ? h : "nan")}'
}
# host_line CPU BEFORE: the comment line of a run's report, BEFORE being what
# host_probe printed at the start.
host_line() {
    local after
    after=$(host_probe "$1")
    set -- "$1" $2 $after
    echo "# host: a system call $2 ns before the runs, $4 after; a hop between two processes $3 / $5 µs (bench/switch on CPU $1; a system call took about 970 ns on a quiet host, 1,300 on a busy one)"
}
