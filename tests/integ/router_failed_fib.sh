#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/router_failed_fib.sh: a router that dies inside a FIB read
# section and is given up (restart_limit) must not pin the writer's
# recycler. The real rr-router, restart_limit 1: one kill restarts it; then
# it is stopped (inject stop), its reader slot is made to read as a batch
# in progress (what a death between fib_read_begin and fib_read_end leaves:
# the slot holds the generation it began at; tables/fib.h), and it is
# killed, which fails it. A route whose prefix is longer than /24 then takes
# a tbl8 group, and its delete retires the group: with the dead router's
# slot reset by the supervisor the delete's reclaim frees the group at once
# (the tables' retire queue is empty), and the slot reads 0. Before the
# reset existed the group stayed retired, and every later one with it.
# The test reads the supervisor's FIB regions through /proc/PID/fd (root).
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init router_failed_fib

n=$(($$ % 250 + 1))
rr_topology
# The router alone gets a small restart budget: the second death fails it.
sed -i 's/^\[service router\]$/&\nrestart_limit = 1\nrestart_window = 60s/' "$RR_T/m.ini"
"$RR" check -c "$RR_T/m.ini" >/dev/null || rr_fail "the manifest does not check: $(cat "$RR_T/m.ini")"
rr_up

# fibmem SUP_PID get|pin: the readers' region's slot 0 and generation, and
# the tables' retire queue of tbl8 groups (struct fib_layout on page 1).
fibmem() {
    "$RR_PY" - "$@" <<'EOF'
import mmap, os, re, struct, sys
pid, what = sys.argv[1], sys.argv[2]
fds = {}
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        link = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        continue
    m = re.match(r"/memfd:fib-rt\d+(-readers)? \(deleted\)$", link)
    if m:
        fds["readers" if m.group(1) else "tables"] = f"/proc/{pid}/fd/{fd}"
if set(fds) != {"readers", "tables"}:
    sys.exit(f"FIB memfds not found in /proc/{pid}/fd: {fds}")
# struct fib_shared: the 64-byte shm header, gen on the next line, reader[i] a line each.
GEN, SLOT0 = 64, 128
with open(fds["readers"], "r+b") as f:
    r = mmap.mmap(f.fileno(), 0)
    gen, slot = struct.unpack_from("<Q", r, GEN)[0], struct.unpack_from("<Q", r, SLOT0)[0]
    if what == "pin":
        struct.pack_into("<Q", r, SLOT0, gen)  # a batch that began at gen and never ended
        slot = gen
    r.close()
# struct fib_layout: 6 uint32, 12 uint64, then dirty, n_prefixes, n_nh,
# tbl8_hwm, tbl8_nfree, tbl8_rq_head, tbl8_rq_len.
with open(fds["tables"], "rb") as f:
    t = mmap.mmap(f.fileno(), 8192, prot=mmap.PROT_READ)
    rq_len = struct.unpack_from("<I", t, 4096 + 24 + 96 + 24)[0]
    t.close()
print(gen, slot, rq_len)
EOF
}

state() { rr_status && [ "${RR_STATE[router]}" = "$1" ]; }
rr_status || rr_fail "status"
pid1=${RR_PIDS[router]}
rr_c inject router kill
[ "$rc" = 0 ] || rr_fail "inject router kill: exit $rc: $err $out"
rr_wait 10 eval 'state up && [ "${RR_PIDS[router]}" != "$pid1" ]' ||
    rr_fail "the router did not come back after its first death"
pid2=${RR_PIDS[router]}
rr_ok "first death: the router restarted (pid $pid1 -> $pid2)"

rr_c inject router stop 60000
[ "$rc" = 0 ] || rr_fail "inject router stop: exit $rc: $err $out"
v=$(fibmem "$RR_PID" pin) || rr_fail "cannot pin the router's FIB reader slot: $v"
read -r gen slot _ <<<"$v"
[ "$slot" = "$gen" ] && [ "$gen" -ge 1 ] || rr_fail "pinned slot reads $slot, generation $gen"
rr_c inject router kill
[ "$rc" = 0 ] || rr_fail "inject router kill: exit $rc: $err $out"
rr_wait 10 state failed || rr_fail "the router is not failed after its second death (${RR_STATE[router]:-?})"
rr_ok "second death inside a read section (slot = generation $gen): the router is failed"

# A /25 takes a tbl8 group; its delete retires it.
P=10.66.$n.0/25
rr_c route add "$P" via "$RR_HOST_B"
[ "$rc" = 0 ] || rr_fail "route add $P: exit $rc: $err $out"
rr_c route del "$P"
[ "$rc" = 0 ] || rr_fail "route del $P: exit $rc: $err $out"
v=$(fibmem "$RR_PID" get) || rr_fail "cannot read the FIB regions: $v"
read -r gen2 slot2 rq2 <<<"$v"
echo "after route add/del $P: generation $gen2, slot 0 $slot2, tbl8 groups retired and not reclaimed $rq2"
[ "$gen2" -gt "$gen" ] || rr_fail "the delete retired nothing (generation $gen -> $gen2)"
[ "$slot2" = 0 ] || rr_fail "the dead router's reader slot still reads $slot2: nobody reset it"
[ "$rq2" = 0 ] || rr_fail "$rq2 tbl8 groups stay retired: the dead router's slot pins the writer's recycler"
rr_ok "the failed router's slot was reset: the retired group was reclaimed at once"

rr_stop
rr_census_ok
t_pass router_failed_fib
