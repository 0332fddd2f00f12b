# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# bench/lib_net.sh: the measuring helpers bench/forward and bench/filter
# share, sourced by both once HZ (getconf CLK_TCK) is set; napi_pin calls
# the host script's die.
#
# Steal (the hypervisor running another guest) is not ours and is left out,
# but /proc/stat counts some of it twice: the host's delay in running a
# halted vCPU that was sent a wake-up is idle (the guest's idle period ends
# when it runs) and steal. So busy - steal is a lower bound, short by that
# delay, and so is the sum of the tick-sampled busy columns (the tick takes
# steal out first); the figure is the larger of the two. cpu_ticks N prints
# both for CPU N; busy_cores makes cores of two readings.
cpu_ticks() { awk -v hz="$HZ" -v c="cpu$1" 'FNR == NR {up = $1; next} $1 == c {printf "%d %d\n", up * hz - $5 - $6 - $9, $2 + $3 + $4 + $7 + $8; exit}' /proc/uptime /proc/stat; }
busy_cores() { # "C0" "C1" T0 T1: the CPU's busy cores between two readings
    python3 -c "import sys; a, b = (list(map(int, x.split())) for x in sys.argv[1:3])
print('%.4f' % (max(b[0] - a[0], b[1] - a[1]) / $HZ / (float(sys.argv[4]) - float(sys.argv[3]))))" "$@"
}
now_s() { date +%s.%N; }
# wait_for TENTHS CMD...: run CMD every 0.1 s until it succeeds, at most TENTHS times.
wait_for() {
    local n=$1
    shift
    for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
    return 1
}
rx_packets() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_packets"; }
# What the generator offered: the frames its device took, passed on or
# dropped (a full ring at the dut's side of the veth). trafgen sends a
# refused frame again (ENOBUFS), so a refusal counts here as offered and
# lost, as the frame would be on a wire, and delivered % (the sink's count
# over this) stays below 100 % even when every frame trafgen counts as sent
# arrived; FWD_VERBOSE=1 prints both counts.
offered() { ip netns exec "$1" sh -c "cd /sys/class/net/$2/statistics && echo \$((\$(cat tx_packets) + \$(cat tx_dropped)))"; }
mac_of() { ip netns exec "$1" cat "/sys/class/net/$2/address"; }

# ---- placement --------------------------------------------------------------
rps() { # NS DEV CPU: DEV's receive processing (RPS) on CPU
    ip netns exec "$1" sh -c "echo $((1 << $3)) > /sys/class/net/$2/queues/rx-0/rps_cpus"
}
napi_pids() { # DEV...: the NAPI threads of the devices (names are unique to this run)
    local d comm
    for d in "$@"; do
        comm="napi/$d-" # a kernel thread's name, as ps shows it: 15 characters
        ps -e -o pid=,comm= | awk -v c="${comm:0:15}" 'index($2, c) == 1 {print $1}'
    done
}
# NS DEV CPU: DEV's NAPI (veth: exists while it has XDP) as a thread on CPU.
# PRIO: SCHED_FIFO PRIO, as a NIC's NAPI in softirq, which preempts tasks
# (else the sink's NAPI thread shares CPU 0 with trafgen's pacing loop, and
# its ring overflows: a third of the XDP mode's packets were lost at
# 200 kpps); 0: SCHED_OTHER, a task among the dut's own.
napi_pin() { # NS DEV CPU PRIO
    ip netns exec "$1" sh -c "echo 1 > /sys/class/net/$2/threaded" ||
        die "cannot make $2's NAPI threaded"
    local p n=0
    for p in $(napi_pids "$2"); do
        taskset -pc "$3" "$p" >/dev/null && n=$((n + 1))
        if [ "$4" = 0 ]; then chrt -o -p 0 "$p"; else chrt -f -p "$4" "$p"; fi
    done
    [ "$n" -gt 0 ] || die "no NAPI thread for $2"
}
