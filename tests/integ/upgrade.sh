#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/upgrade.sh: `ringrouter upgrade SERVICE [--binary PATH]`
# (issue 18) with the real router, TAP drivers a and b and a shaper on b,
# under a numbered stream A -> B of 2,000 datagrams a second
# (bench/faultflow):
#   - each service A -> B -> A: B is a copy of the service's binary whose ELF
#     build id is changed (a test build that reports another id); each
#     answer names both pids and build ids, `status --json` then shows the
#     new instance's binary and build id, and its pid changed;
#   - no datagram of the stream lost, duplicated or reordered through all
#     eight upgrades;
#   - a binary stamped for another layout of the shared regions is refused,
#     the message naming both layouts, the service untouched (same pid);
#   - a binary that cannot run as the service (rr-tap given to the router:
#     it exits at start) is rolled back: exit 100, the old instance never
#     stopped (same pid), and it still has a standby;
#   - bad arguments: a relative path, a missing file, no such service;
#   - a clean census at the end.
set -u
. "$(dirname "$0")/../lib/router.sh"
rr_init upgrade
rr_need ss
rr_shaper_init
rr_faultflow_init

RR_SERVICES=(router driver-a driver-b shaper-b)
rr_topology $'[shaper b]\nrate = 1gbit\nburst = 256k'
rr_start
rr_ok "up: A $RR_HOST_A -- [driver-a, router, shaper-b, driver-b] -- B $RR_HOST_B"
out=$(rr_in "$RR_NS_A" ping -n -c 2 -i 0.2 -W 2 "$RR_HOST_B" 2>&1) || rr_fail "ping A -> B: $out"

# new_build SRC DST: a copy of SRC whose ELF build id (NT_GNU_BUILD_ID) has
# every byte inverted. Prints the new id.
new_build() {
    "$RR_PY" - "$1" "$2" <<'EOF_PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
phoff, = struct.unpack_from("<Q", b, 0x20)
phentsize, phnum = struct.unpack_from("<HH", b, 0x36)
for i in range(phnum):
    p_type, _, p_off, _, _, p_filesz = struct.unpack_from("<IIQQQQ", b, phoff + i * phentsize)
    if p_type != 4:  # PT_NOTE
        continue
    off = p_off
    while off + 12 <= p_off + p_filesz:
        namesz, descsz, ntype = struct.unpack_from("<III", b, off)
        name, desc = off + 12, off + 12 + ((namesz + 3) & ~3)
        if ntype == 3 and bytes(b[name:name + 4]) == b"GNU\0":
            b[desc:desc + descsz] = bytes(x ^ 0xff for x in b[desc:desc + descsz])
            open(sys.argv[2], "wb").write(b)
            print(b[desc:desc + descsz].hex())
            sys.exit(0)
        off = desc + ((descsz + 3) & ~3)
sys.exit("no build id in " + sys.argv[1])
EOF_PY
}

# svc_field SVC FIELD: a field of SVC in `status --json`.
svc_field() {
    "$RR" status --json -S "$RR_SOCK" | "$RR_PY" -c '
import json, sys
print(next(s for s in json.load(sys.stdin)["services"] if s["name"] == sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

# The stream (tests/lib/router.sh rr_ff_start).
rr_ff_start "$RR_NS_A" "$RR_NS_B" "$RR_HOST_B" 2000
rr_msleep 300

# upgrade_to SVC PATH ID: upgrade SVC to PATH, whose build id is ID.
upgrade_to() {
    local svc=$1 path=$2 id=$3 pid0 out rc
    rr_status || rr_fail "status"
    pid0=${RR_PIDS[$svc]}
    out=$("$RR" upgrade "$svc" --binary "$path" -S "$RR_SOCK" 2>&1)
    rc=$?
    [ $rc = 0 ] || rr_fail "upgrade $svc --binary $path exited $rc: $out"
    grep -q "^upgraded $svc: pid $pid0 .* -> pid [0-9]* $path (build ${id:0:12}); handover [0-9.]* ms$" <<<"$out" ||
        rr_fail "upgrade $svc: unexpected answer: $out"
    rr_status || rr_fail "status"
    [ "${RR_STATE[$svc]}" = up ] && [ "${RR_PIDS[$svc]}" != "$pid0" ] ||
        rr_fail "after upgrade $svc: ${RR_STATE[$svc]}, pid ${RR_PIDS[$svc]} (was $pid0)"
    [ "$(svc_field "$svc" binary)" = "$path" ] || rr_fail "status: $svc's binary is $(svc_field "$svc" binary), not $path"
    [ "$(svc_field "$svc" build_id)" = "$id" ] || rr_fail "status: $svc's build id is $(svc_field "$svc" build_id), not $id"
    rr_ok "$out"
}

for svc in router driver-a driver-b shaper-b; do
    case $svc in router) bin=rr-router ;; shaper-b) bin=rr-shaper ;; *) bin=rr-tap ;; esac
    a=$RR_T/bin/$bin
    b=$RR_T/bin/$bin.b
    [ -f "$b" ] || idb=$(new_build "$a" "$b") || rr_fail "cannot make a second build of $bin"
    chmod 755 "$b"
    ida=$(svc_field "$svc" build_id)
    [ -n "$ida" ] && [ "$ida" != "$idb" ] || rr_fail "$svc: build ids '$ida' and '$idb'"
    upgrade_to "$svc" "$b" "$idb"
    upgrade_to "$svc" "$a" "$ida"
done

# A binary stamped for another layout: refused, naming both.
sed 's/ringrouter-layout: svc /ringrouter-layout: svc 9/' "$RR_T/bin/rr-router" >"$RR_T/bin/rr-router.other"
chmod 755 "$RR_T/bin/rr-router.other"
rr_status || rr_fail "status"
pid0=${RR_PIDS[router]}
out=$("$RR" upgrade router --binary "$RR_T/bin/rr-router.other" -S "$RR_SOCK" 2>&1)
rc=$?
[ $rc = 100 ] || rr_fail "upgrade to another layout exited $rc: $out"
v=$(sed -n 's/.*these regions: *svc \([0-9]*\),.*/\1/p' <<<"$out") # IPC_SVC_VERSION, whatever it is now
grep -q "built for another layout of the shared regions; refused" <<<"$out" &&
    [ -n "$v" ] && grep -q "that binary: *svc 9$v," <<<"$out" ||
    rr_fail "upgrade to another layout: the message does not name both layouts: $out"
rr_status && [ "${RR_PIDS[router]}" = "$pid0" ] || rr_fail "the refused upgrade touched the router"
rr_ok "another layout refused: $(head -n 1 <<<"$out")"

# A binary that exits at start (rr-tap as the router): rolled back.
out=$("$RR" upgrade router --binary "$RR_T/bin/rr-tap" -S "$RR_SOCK" 2>&1)
rc=$?
[ $rc = 100 ] || rr_fail "upgrade router to rr-tap exited $rc: $out"
grep -q "the new binary $RR_T/bin/rr-tap exited with status [0-9]* before it was ready to take over; router (pid $pid0) goes on running $RR_T/bin/rr-router" <<<"$out" ||
    rr_fail "upgrade router to rr-tap: unexpected answer: $out"
rr_status && [ "${RR_PIDS[router]}" = "$pid0" ] && [ "${RR_STATE[router]}" = up ] ||
    rr_fail "the rolled-back upgrade touched the router: ${RR_STATE[router]} pid ${RR_PIDS[router]}"
rr_wait 5 eval '[ "$(svc_field router standby_binary)" = "$RR_T/bin/rr-router" ] && [ "$(svc_field router standby_parked)" = True ]' ||
    rr_fail "after the rollback the router has no standby of its own binary: $(svc_field router standby_binary)"
rr_ok "rolled back: $out"

# Bad arguments.
for args in "router --binary rr-router|give an absolute path" "router --binary $RR_T/none|No such file or directory" \
    "nosuch|no service \"nosuch\"" "router --binary $RR_T/m.ini|not an executable regular file"; do
    IFS='|' read -r a want <<<"$args"
    # shellcheck disable=SC2086
    out=$("$RR" upgrade $a -S "$RR_SOCK" 2>&1)
    rc=$?
    [ $rc = 100 ] && grep -q -- "$want" <<<"$out" || rr_fail "upgrade $a: exit $rc, expected 100 and '$want': $out"
done
rr_ok "bad arguments refused, each named"

rr_ff_whole "through eight upgrades"
rr_ok "the stream through eight upgrades: all $RR_FF_SENT datagrams arrived, none twice, none out of order"
rr_stop
rr_census_ok
echo "PASS upgrade"
