#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/sup_hostile_pool.sh: every service maps the pool's metadata
# and depot read-write, and the supervisor (root) reads them when it
# reclaims a dead service's buffers and in the census. driver-a runs as
# rr-null-evil-pool (tests/svc/nulldrv.c, restart = never): once ready it
# makes three buffers it holds name owner 777, makes its magazine's depot word
# claim 65535 buffers with a chain that loops after three, says its output
# ring has 2^31 slots with a mask of all ones, and kills itself. The
# supervisor must stay up, log each corruption with its region and offset
# (the ring header, the count, the loop), count them in `stats` (shm_corrupt),
# reclaim what driver-a held under its own id, keep the other services up,
# and at shutdown repair the pool and count again: exit 101 (the census found
# buffers lost and owners that name no one), and after the repairs every
# buffer free. The old supervisor followed the count 65535 times round the
# loop and left a FREE word of 65535 buffers for the next service to claim.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init sup_hostile_pool

cp "$SUP_T/bin/rr-null" "$SUP_T/bin/rr-null-evil-pool" || sup_fail "cannot copy rr-null"
sup_netns
sup_manifest "$SUP_T/m.ini" driver-a.binary=rr-null-evil-pool driver-a.restart=never
sup_start_nowait "$SUP_NS" "$SUP_T/m.ini"
sup_wait 10 grep -q '^ringrouter: driver-a: reclaimed' "$SUP_LOG" || sup_fail "driver-a did not die and get reclaimed"
grep -q 'evil-pool mode: owners 777' "$SUP_LOG" || sup_fail "driver-a did not say it spoiled the pool"

P='^ringrouter: pool [^ ]+: '
sup_log_has 'ringrouter: ring rx-a: its header.s size, mask or owners at offset 0x40 were overwritten \(size 2147483648, mask 0xffffffff, owners [0-9]+ -> [0-9]+\); repaired' ||
    sup_bad "no line for rx-a's overwritten header"
grep -qE "${P}depot word [0-9]+ at offset 0x[0-9a-f]+: count 65535 exceeds the 64 of a magazine$" "$SUP_LOG" ||
    sup_bad "no line for the depot word's count of 65535"
grep -qE "${P}depot word [0-9]+ at offset 0x[0-9a-f]+: buffer [0-9]+, link 3 of its chain, is met a second time" "$SUP_LOG" ||
    sup_bad "no line for the loop in driver-a's magazine"
sup_log_has 'ringrouter: driver-a: reclaimed 5 buffers' || sup_bad "driver-a's 5 buffers still its own were not reclaimed"
corrupt=$("$RR" stats --json -S "$SUP_SOCK" | "$SUP_PY" -c 'import json, sys; print(json.load(sys.stdin)["shm_corrupt"])') ||
    sup_bad "stats --json has no shm_corrupt"
[ "${corrupt:-0}" -ge 3 ] || sup_bad "stats shm_corrupt is ${corrupt:-?}, not at least 3"
"$RR" stats -S "$SUP_SOCK" | grep -qE '^shared memory: [0-9]+ corrupt words found and repaired$' ||
    sup_bad "stats has no shared memory line"
sup_alive "$SUP_PID" || sup_fail "the supervisor died"
# Started without waiting (driver-a dies at once), the others may still be
# starting on a loaded machine: up within 10 s, and so they stay.
others_up() { sup_status && [ "${SUP_STATE[router]}" = up ] && [ "${SUP_STATE[driver-b]}" = up ]; }
sup_wait 10 others_up || sup_bad "router or driver-b is not up: ${SUP_STATE[router]:-?}, ${SUP_STATE[driver-b]:-?}"
[ "${SUP_STATE[driver-a]}" = down ] || sup_bad "driver-a is ${SUP_STATE[driver-a]}, not down (restart = never)"

sup_stop TERM 10
echo "exit $SUP_RC; the census lines:"
grep '^ringrouter: census' "$SUP_LOG" | sed 's/^/  /'
[ "$SUP_RC" = 101 ] || sup_bad "exit status $SUP_RC, expected 101"
sup_log_has 'ringrouter: census: [0-9]+ corrupt words were found in shared memory during the run, each logged above and repaired' ||
    sup_bad "no census line counting the corruption of the run"
grep -qE '^ringrouter: census: LEAK: .* 3 bad owner' "$SUP_LOG" || sup_bad "the census did not count 3 bad owners"
[ "$(grep -cE "${P}buffer [0-9]+ meta at offset 0x[0-9a-f]+: owner 777 names no one; freed$" "$SUP_LOG")" = 3 ] ||
    sup_bad "not 3 lines freeing the buffers of owner 777"
sup_log_has 'ringrouter: census: after [0-9]+ repairs: 4096 of 4096 free, 0 held, 0 in rings, 0 lent, 0 lost, 0 duplicated, 0 bad owner, 0 bad depot words, 0 bad links' ||
    sup_bad "after the repairs, not every buffer free"
sup_verdict sup_hostile_pool
