#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/bench_ratios.sh: bench/forward's ratio rules
# (bench/forward_modes.py) over results files written here, no traffic:
#   - against Linux in two placements the worse ratio is kept (the better
#     Linux), and a starved placement (under 80 % of the ceiling) is passed
#     over and named, not averaged in;
#   - with only a starved Linux there is no ratio (nan), said why;
#   - of ringrouter's NAPI priorities the worse ratio is the metric, and a
#     priority with no run that counts makes it nan;
#   - CPU per packet: the better Linux is the one with less CPU per packet;
#     a run under 99 % delivered counts for no CPU ratio;
#   - RTT: against the better Linux, worse of idle and loaded; the default
#     manifest's p99 (ringrouter-default) idle and loaded apart;
#   - the floor (onexsk): its CPU and idle ping against the better Linux,
#     ringrouter's and twoxsk's against it at the same NAPI priority, the
#     worse kept;
#   - CPU 1's context switches per 1,000 packets: a table row, per mode;
#   - both CPUs' busy time at the maxima: rows, and a note when CPU 0 (the
#     generator and the sink) alone was saturated; a Linux that CPU 0 held
#     under 80 % of the ceiling gives no ratio but a bound from above;
#   - bench/forward tap's bound from its profiles (bench/forward_tapperf.py).
# The figures are made up: what is asserted is which one each rule picks.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/lib/common.sh
t_seed
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
T=$(mktemp -d /tmp/rr-benchratios.XXXXXX)
trap 'rc=$?; rm -rf "$T"; exit $(t_exit_rc $rc)' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# row MODE TEST VALUE OFFERED CPU1 DELIVERED TARGET (run 1)
row() { printf '%s\t%s\t1\t%s\t%s\t%s\t%s\t%s\n' "$@"; }

# metric FILE NAME: the value of a last line "NAME VALUE" of the report
metric() { awk -v k="$2" '$1 == k {print $2}' "$1"; }
# wants OUT WHAT NAME:VALUE...: each metric of OUT is VALUE, or fail naming WHAT
wants() {
    local out=$1 what=$2 want got
    shift 2
    for want; do
        got=$(metric "$out" "${want%%:*}")
        [ "$got" = "${want#*:}" ] || fail "$what: want ${want%%:*} ${want#*:}, got ${got:-nothing}: $(tail -20 "$out")"
    done
}
report() { # RESULTS OUT
    python3 bench/forward_modes.py "$1" "$T" 5 1 200000 >"$2" 2>&1 || fail "forward_modes.py exited $?: $(tail -5 "$2")"
}

# 1. Linux starved in the backlog (100 of 400 kpps), fine with NAPI at
#    FIFO (450) and SCHED_OTHER (420); ringrouter 390 at FIFO, 380 at
#    SCHED_OTHER. Against the better Linux (450): 390/450 and 380/450; the
#    worse of ringrouter's: 380/450 = 0.844.
{
    row pair-plain ceiling 400000 400000 0 1 0
    row ringrouter@50 max1 390000 395000 0.9 0.99 0
    row ringrouter@0 max1 380000 390000 0.9 0.99 0
    row linux max1 100000 100000 0.7 1 0
    row linux@50 max1 450000 450000 0.5 1 0
    row linux@0 max1 420000 420000 0.6 1 0
    # CPU at 200 kpps: ringrouter 2.0 and 2.2 µs a packet; Linux 7.0 (RPS),
    # 1.0 (FIFO) and 1.5 (OTHER): against the best (1.0) 2.0 and 2.2, so 2.2.
    row ringrouter@50 fix1 200000 205000 0.40 0.999 200000
    row ringrouter@0 fix1 200000 205000 0.44 0.999 200000
    row linux fix1 200000 205000 1.40 1 200000
    row linux@50 fix1 200000 205000 0.20 1 200000
    row linux@0 fix1 200000 205000 0.30 1 200000
    # RTT p50: ringrouter 150 / 160 µs idle / loaded at both priorities,
    # Linux 100 / 50 (RPS), 75 / 80 (FIFO), 70 / 90 (OTHER): against the
    # best Linux idle 150/70, loaded 160/50: the worst 3.2.
    for m in ringrouter@50 ringrouter@0; do
        row "$m" rtt_idle_p50 150 0 0 1 0
        row "$m" rtt_load_p50 160 200000 0 1 200000
    done
    row linux rtt_idle_p50 100 0 0 1 0
    row linux rtt_load_p50 50 200000 0 1 200000
    row linux@50 rtt_idle_p50 75 0 0 1 0
    row linux@50 rtt_load_p50 80 200000 0 1 200000
    row linux@0 rtt_idle_p50 70 0 0 1 0
    row linux@0 rtt_load_p50 90 200000 0 1 200000
} >"$T/a.tsv"
report "$T/a.tsv" "$T/a.out"
[ "$(metric "$T/a.out" fwd64_max_vs_linux)" = 0.844 ] ||
    fail "max: want 0.844 (380 of the better Linux's 450), got $(metric "$T/a.out" fwd64_max_vs_linux): $(grep max_vs "$T/a.out")"
grep -q "linux's maximum 100 kpps is 25 % of the generator's ceiling" "$T/a.out" ||
    fail "max: the starved Linux placement is not named: $(grep 'left out' "$T/a.out")"
[ "$(metric "$T/a.out" fwd64_cpu_per_pkt_vs_linux)" = 2.200 ] ||
    fail "cpu: want 2.200 (2.2 µs against the better Linux's 1.0), got $(metric "$T/a.out" fwd64_cpu_per_pkt_vs_linux)"
[ "$(metric "$T/a.out" rtt_p50_vs_linux)" = 3.200 ] ||
    fail "rtt p50: want 3.200 (160 loaded against the better Linux's 50), got $(metric "$T/a.out" rtt_p50_vs_linux)"
echo "ok: the better Linux placement, the starved one passed over and named: max 0.844, cpu 2.200, rtt 3.200"

# 2. Only the starved Linux: no max ratio.
grep -v "linux@" "$T/a.tsv" >"$T/b.tsv"
report "$T/b.tsv" "$T/b.out"
[ "$(metric "$T/b.out" fwd64_max_vs_linux)" = nan ] ||
    fail "max with only a starved Linux: want nan, got $(metric "$T/b.out" fwd64_max_vs_linux)"
echo "ok: with only a starved Linux, fwd64_max_vs_linux nan"

# 3. ringrouter@0 delivered 98 % at the fixed rate: it counts for no CPU
#    ratio, so the metric (the worse priority) is nan, said why.
sed 's/^\(ringrouter@0\tfix1\t1\t200000\t205000\t0.44\t\)0.999/\10.98/' "$T/a.tsv" >"$T/c.tsv"
grep -q "ringrouter@0.fix1.*0.98" "$T/c.tsv" || fail "the test's own edit of the results did not apply"
report "$T/c.tsv" "$T/c.out"
[ "$(metric "$T/c.out" fwd64_cpu_per_pkt_vs_linux)" = nan ] ||
    fail "cpu with a priority under 99 % delivered: want nan, got $(metric "$T/c.out" fwd64_cpu_per_pkt_vs_linux)"
grep -q "no run counts for ringrouter@0" "$T/c.out" || fail "cpu: the priority with no run is not named"
echo "ok: a priority under 99 % delivered gives no CPU ratio, named"

# 4. The floor (onexsk, bench/xskfwd.c): 1.5 and 1.6 µs a packet at FIFO
#    and SCHED_OTHER; idle ping p50 90 and 100 µs. Against the best Linux
#    (1.0 µs, 70 µs) the worse priority: 1.6 and 100/70 = 1.429.
#    ringrouter against the floor at its own priority: 2.0/1.5 and 2.2/1.6,
#    so 1.375; idle p50 150/90 and 150/100, so 1.667. Maximum: 400 and
#    395 kpps against the best Linux's 450, the worse 0.878; ringrouter's
#    390/400 and 380/395, the worse 0.962.
{
    cat "$T/a.tsv"
    row onexsk@50 max1 400000 400000 0.8 1 0
    row onexsk@0 max1 395000 395000 0.8 1 0
    row onexsk@50 fix1 200000 205000 0.30 1 200000
    row onexsk@0 fix1 200000 205000 0.32 1 200000
    row onexsk@50 rtt_idle_p50 90 0 0 1 0
    row onexsk@0 rtt_idle_p50 100 0 0 1 0
} >"$T/d.tsv"
report "$T/d.tsv" "$T/d.out"
wants "$T/d.out" floor fwd64_cpu_per_pkt_onexsk_vs_linux:1.600 fwd64_cpu_per_pkt_vs_onexsk:1.375 \
    rtt_p50_onexsk_vs_linux:1.429 rtt_p50_vs_onexsk:1.667 fwd64_cpu_per_pkt_vs_linux:2.200 \
    fwd64_max_onexsk_vs_linux:0.878 fwd64_max_vs_onexsk:0.962 fwd64_max_vs_linux:0.844
grep -q "fwd64_cpu_per_pkt_vs_onexsk" "$T/a.out" && fail "floor: a line without onexsk in the results"
echo "ok: the floor's lines: onexsk against the best Linux, ringrouter against onexsk at its own priority"

# 4b. The two-process floor (twoxsk, bench/xsksplit.c) against onexsk at its
#     own priority, the worse kept: maximum 360/400 and 380/395, so 0.900;
#     1.8/1.5 and 1.76/1.6 µs a packet, so 1.200; idle p50 117/90 and
#     120/100, so 1.300; idle p99 300/200 and 250/250, so 1.500.
{
    cat "$T/d.tsv"
    # PRIO MAX OFFERED CPU1 P50 P99 (onexsk's P99)
    while read -r p max off cpu p50 p99 o99; do
        row "twoxsk@$p" max1 "$max" "$off" 0.8 1 0
        row "twoxsk@$p" fix1 200000 205000 "$cpu" 1 200000
        row "twoxsk@$p" rtt_idle_p50 "$p50" 0 0 1 0
        row "twoxsk@$p" rtt_idle_p99 "$p99" 0 0 1 0
        row "onexsk@$p" rtt_idle_p99 "$o99" 0 0 1 0
    done <<<$'50 360000 400000 0.36 117 300 200\n0 380000 395000 0.352 120 250 250'
} >"$T/d2.tsv"
report "$T/d2.tsv" "$T/d2.out"
wants "$T/d2.out" twoxsk fwd64_max_twoxsk_vs_onexsk:0.900 fwd64_cpu_per_pkt_twoxsk_vs_onexsk:1.200 \
    rtt_p50_twoxsk_vs_onexsk:1.300 rtt_p99_twoxsk_vs_onexsk:1.500 fwd64_cpu_per_pkt_vs_onexsk:1.375
grep -q "twoxsk_vs_onexsk" "$T/d.out" && fail "twoxsk: a line without twoxsk in the results"
echo "ok: twoxsk against onexsk at its own priority, the worse kept"

# 5. CPU 1's context switches per 1,000 packets (fix1_cs, max1_cs): a row
#    of the table with the median and range over the runs (30 and 40 at
#    the fixed rate: 35.0), "-" for a mode without them, and no row at all
#    from results that have none (perf missing).
{
    cat "$T/a.tsv"
    printf 'ringrouter@50\tfix1_cs\t%s\t%s\t0\t0\t0\t200000\n' 1 30 2 40
    printf 'ringrouter@50\tmax1_cs\t1\t45\t0\t0\t0\t0\n'
} >"$T/e.tsv"
report "$T/e.tsv" "$T/e.out"
cs=$(grep "context switches per 1,000 packets at 200 kpps" "$T/e.out") || fail "cs: no row: $(head -12 "$T/e.out")"
[[ $cs == "| UDP 64 B, 1 flow: CPU 1 context switches per 1,000 packets at 200 kpps | 35.0 (30.0–40.0) | -"* ]] ||
    fail "cs: want ringrouter@50's median 35.0 (30.0–40.0) then '-' for ringrouter@0, got: $cs"
grep -q "context switches per 1,000 packets at the max | 45.0 (45.0–45.0)" "$T/e.out" || fail "cs: no row at the max"
grep -q "context switches" "$T/a.out" && fail "cs: a row from results that have no switch counts"
echo "ok: context switches per 1,000 packets: median and range per mode, no row without counts"

# 6. CPU 0's busy cores at the maxima (max1_cpu0): when CPU 0 was busy
#    0.97 cores or more for both modes of a pair of runs that counted and
#    CPU 1 under 0.95 for both, the report notes that CPU 0 set the maxima,
#    in how many pairs. CPU 1 in a.tsv: ringrouter 0.9, Linux 0.5 and 0.6.
#    Here CPU 0 is busy 1.0 core but only 0.80 with linux@0 (0.90 with the
#    starved RPS placement, which counts for no ratio): 2 of the 4
#    pairs (ringrouter@50 and @0 against linux@50 and linux@0; the starved
#    RPS placement counts for none). The rows: CPU 0 busy 1.00, CPU 1 0.90,
#    and 1.0 core over 395,000 frames offered is 2.53 µs a frame; at the
#    fixed rate 0.5 core over 205,000 frames is 2.44.
{
    cat "$T/a.tsv"
    for m in ringrouter@50:395000 ringrouter@0:390000 linux:100000 linux@50:450000 linux@0:420000; do
        c=1.00
        [ "${m%%:*}" != linux@0 ] || c=0.80
        [ "${m%%:*}" != linux ] || c=0.90
        printf '%s\tmax1_cpu0\t1\t%s\t%s\t0\t0\t0\n' "${m%%:*}" "$c" "${m#*:}"
    done
    printf 'pair-plain\tceiling_cpu0\t1\t1.00\t400000\t0\t0\t0\n'
    printf 'ringrouter@50\tfix1_cpu0\t1\t0.50\t205000\t0\t0\t200000\n'
} >"$T/f.tsv"
report "$T/f.tsv" "$T/f.out"
grep -q "^# note: max1: in 2 of the 4 pairs of runs its maximum's ratios counted, CPU 0 .* at most 0.90:" "$T/f.out" ||
    fail "cpu0: want a note naming 2 of 4 pairs and CPU 1 at most 0.90, got: $(grep -i 'note\|max1' "$T/f.out")"
grep -q "at the max, CPU 0 (generator, sink) busy, cores | 1.00 (1.00–1.00) | 1.00 (1.00–1.00) | 0.90" "$T/f.out" ||
    fail "cpu0: no CPU 0 row: $(grep 'CPU 0' "$T/f.out")"
grep -q "at the max, CPU 1 (dut) busy, cores | 0.90 (0.90–0.90)" "$T/f.out" || fail "cpu0: no CPU 1 row"
grep -q "at the max, CPU 0 µs a frame offered | 2.53 (2.53–2.53)" "$T/f.out" ||
    fail "cpu0: want 2.53 µs a frame for ringrouter@50, got: $(grep 'a frame offered' "$T/f.out")"
grep -q "ceiling.*400 (400–400) kpps, CPU 0 2.50 (2.50–2.50) µs a frame" "$T/f.out" ||
    fail "cpu0: the ceiling's CPU 0 a frame: $(grep ceiling "$T/f.out")"
grep -q "CPU 0 (generator, sink) µs a frame offered at 200 kpps | 2.44 (2.44–2.44) | -" "$T/f.out" ||
    fail "cpu0: want 0.5 core over 205,000 frames, 2.44 µs, at the fixed rate: $(grep 'at 200 kpps' "$T/f.out")"
[ "$(metric "$T/f.out" fwd64_max_vs_linux)" = 0.844 ] || fail "cpu0: the ratio itself changed"
sed 's/^\(linux@[0-9]*\tmax1_cpu0\t1\t\)1.00/\10.96/' "$T/f.tsv" >"$T/g.tsv"
grep -q "linux@50.max1_cpu0.1.0.96" "$T/g.tsv" || fail "the test's own edit of the results did not apply"
report "$T/g.tsv" "$T/g.out"
grep -q "^# note: max1: in " "$T/g.out" && fail "cpu0: a note with Linux's CPU 0 at 0.96 cores: $(grep note "$T/g.out")"
grep -q "^# note" "$T/a.out" && fail "cpu0: a note from results without CPU 0"
echo "ok: CPU 0 and CPU 1 at the maxima: rows, and a note only for the pairs where CPU 0 alone was saturated"

# 7. A generator that outruns Linux: the ceiling 600 kpps, so Linux's 450
#    (FIFO) and 420 (SCHED_OTHER) are under 80 % of it and count for no
#    ratio. Where CPU 0 held Linux there (linux@50: 1.00 core, CPU 1 0.5)
#    and ringrouter was offered 95 % of the ceiling (590 kpps), the report
#    bounds the ratio from above: 390/450 = 0.867. Not where Linux's CPU 0
#    had room (linux@0: 0.80 core), nor for ringrouter@0, offered 390 kpps.
sed -e 's/^\(pair-plain\tceiling\t1\t\)400000\t400000/\1600000\t600000/' \
    -e 's/^\(ringrouter@50\tmax1\t1\t390000\t\)395000/\1590000/' "$T/f.tsv" >"$T/h.tsv"
grep -q "pair-plain.ceiling.1.600000" "$T/h.tsv" && grep -q "ringrouter@50.max1.1.390000.590000" "$T/h.tsv" ||
    fail "the test's own edit of the results did not apply"
report "$T/h.tsv" "$T/h.out"
[ "$(metric "$T/h.out" fwd64_max_vs_linux)" = nan ] || fail "bound: want no ratio, got $(metric "$T/h.out" fwd64_max_vs_linux)"
grep -q "^# note: max1: ringrouter@50 against linux@50 at most 0.867 " "$T/h.out" ||
    fail "bound: want ringrouter@50 against linux@50 at most 0.867, got: $(grep '^# note' "$T/h.out")"
[ "$(grep -c '^# note: max1: .* at most' "$T/h.out")" = 1 ] ||
    fail "bound: want one bound (not linux@0's, not ringrouter@0's), got: $(grep '^# note' "$T/h.out")"
echo "ok: a Linux held by CPU 0 under 80 % of the ceiling gives no ratio and a bound from above"

# 8. bench/forward tap's bound from its profiles (bench/forward_tapperf.py
#    report): per run, 1 / (the least TAP read + write of ringrouter and
#    onefwd) a second over the better (faster) Linux's rate, udp1 only, then
#    the median. Run 1: ringrouter's 0.7 + 0.5 (onefwd's 1.5 is more), so
#    833,333 a second, over Linux NAPI's 1,250,000 (RPS 1,000,000): 0.667.
#    Run 2: 1.0 µs, 1,000,000 over 1,000,000: 1.0. Run 3: 1.26 µs, 793,651
#    over 1,600,000: 0.496. Median 0.667. udp16's rows (a bound of 2.5) and a
#    run without Linux (run 4) count for nothing.
{
    printf 'udp1\tringrouter\t1\t600000\t1.6\t0.7\t0.5\t0.3\n'
    printf 'udp1\tonefwd\t1\t200000\t4.0\t0.9\t0.6\t0.3\n'
    printf 'udp1\tlinux\t1\t1000000\t0.7\t0\t0\t0\n'
    printf 'udp1\tlinuxnapi\t1\t1250000\t0.8\t0\t0\t0\n'
    printf 'udp1\tringrouter\t2\t600000\t1.5\t0.6\t0.4\t0.2\n'
    printf 'udp1\tlinux\t2\t800000\t0.5\t0\t0\t0\n'
    printf 'udp1\tlinuxnapi\t2\t1000000\t0.9\t0\t0\t0\n'
    printf 'udp1\tringrouter\t3\t600000\t1.7\t0.8\t0.46\t0.2\n'
    printf 'udp1\tlinuxnapi\t3\t1600000\t0.6\t0\t0\t0\n'
    printf 'udp1\tringrouter\t4\t600000\t0.5\t0.1\t0.1\t0.1\n'
    printf 'udp16\tringrouter\t1\t600000\t1.0\t0.2\t0.2\t0.1\n'
    printf 'udp16\tlinuxnapi\t1\t1000000\t0.8\t0\t0\t0\n'
} >"$T/k.tsv"
python3 bench/forward_tapperf.py report "$T/k.tsv" "$T/k.metric" >"$T/k.out" || fail "forward_tapperf.py report exited $?"
[ "$(metric "$T/k.metric" tap_udp64_bound_vs_linux)" = 0.667 ] ||
    fail "tap bound: want 0.667, got $(cat "$T/k.metric")"
grep -q "^# kernel: udp1 ringrouter, .*median of 4): busy 1.55, TAP read 0.65, TAP write 0.43 (of which B's receive 0.20), the rest 0.47$" "$T/k.out" ||
    fail "tap bound: ringrouter's udp1 line, got: $(grep 'udp1 ringrouter' "$T/k.out")"
grep '^# kernel: udp1 linuxnapi' "$T/k.out" | grep -q "busy 0.80$" ||
    fail "tap bound: Linux's udp1 line, got: $(grep 'udp1 linuxnapi' "$T/k.out")"
grep -v '^udp1.linux' "$T/k.tsv" >"$T/k2.tsv"
python3 bench/forward_tapperf.py report "$T/k2.tsv" "$T/k2.metric" >/dev/null || fail "forward_tapperf.py report exited $?"
[ "$(metric "$T/k2.metric" tap_udp64_bound_vs_linux)" = nan ] ||
    fail "tap bound without Linux's udp1: want nan, got $(cat "$T/k2.metric")"
echo "ok: the TAP bound is per run over udp1, the median, nan without Linux"

# 9. The default manifest's tail (ringrouter-default): its ping p99 over
#    the best Linux's, idle and loaded apart, the worse priority. Idle:
#    300/150 (FIFO) and 400/150 (SCHED_OTHER) against linux (150) and
#    linux@50 (200): 2.667; loaded: 900/300 and 600/300, 3.000. The tuned
#    ringrouter's rtt_p99_vs_linux does not take them in, and without the
#    mode both lines are nan.
{
    cat "$T/a.tsv"
    row linux rtt_idle_p99 150 0 0 1 0
    row linux@50 rtt_idle_p99 200 0 0 1 0
    row linux rtt_load_p99 300 200000 0 1 200000
    row linux@50 rtt_load_p99 400 200000 0 1 200000
    row ringrouter@50 rtt_idle_p99 300 0 0 1 0
    row ringrouter@50 rtt_load_p99 600 200000 0 1 200000
    row ringrouter-default@50 rtt_idle_p99 300 0 0 1 0
    row ringrouter-default@0 rtt_idle_p99 400 0 0 1 0
    row ringrouter-default@50 rtt_load_p99 900 200000 0 1 200000
    row ringrouter-default@0 rtt_load_p99 600 200000 0 1 200000
} >"$T/m.tsv"
report "$T/m.tsv" "$T/m.out"
wants "$T/m.out" "default manifest" rtt_default_p99_vs_linux_idle:2.667 rtt_default_p99_vs_linux_load:3.000 \
    rtt_p99_vs_linux:2.000
grep -q "| ringrouter, default manifest, NAPI FIFO 50 | ringrouter, default manifest, NAPI SCHED_OTHER |" "$T/m.out" ||
    fail "default manifest: its columns are not in the table: $(grep '^| test' "$T/m.out")"
wants "$T/a.out" "without the default manifest" rtt_default_p99_vs_linux_idle:nan rtt_default_p99_vs_linux_load:nan
echo "ok: the default manifest's p99 against the best Linux, idle and loaded apart, the worse priority"

t_pass bench_ratios
