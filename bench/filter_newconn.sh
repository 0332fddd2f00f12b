# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154,SC2034 # the globals are bench/filter's (window reads GEN_ARGS, WIN_*)
# bench/filter_newconn.sh: bench/filter's new connections a second, sourced
# by it after bench/filter_net.sh. Every frame a UDP connection of its own
# (bench/trainsend.c -N: socket frames, 16 million tuples, each run going on
# where the last one of the same dut stopped, so that no table is offered a
# tuple it may still hold), towards UDP 9 of the sink, which the ruleset
# accepts as `ct state new`: each frame the sink receives is a connection
# the dut created, accepted and forwarded.
#
# Both tables are bounded alike (CT_MAX, bench/filter: the kernel's
# nf_conntrack_max, which a namespace cannot change, is rr-filter's
# conntrack_max), and each window measures once its table is full, so
# both sides pay for a new connection what a flood costs: an early drop of
# an unreplied one to make room. The early drops and the drops for a full
# table are counted per window on both sides (their `...ct` lines).
#
#   ncmax   as fast as the generator can: the most delivered, the dut's
#           threads' cores (a baseline under FILTER_BUSY_MIN there was held
#           by the generator or starved: bench/filter_report.py leaves it out)
#   nc1..N  paced (FILTER_NC_STEPS, 5): the highest rate of which the sink
#           still receives 99 % is the figure (nc_var's search), counted
#           only where a paced step the generator offered above it lost
#           more (else the paced generator held it: bench/filter_report.py)
# The generator's ceiling with the same frames: `ceiling ncmax`.

declare -A NC_NEXT=() # the kind's next tuple (trainsend -N)
nc_c0='' nc_c1=''

nc_on() { [ "$1" = nft ] || [ "$1" = rr-filter ]; } # VARIANT: measured for new connections

rr_counters() { # NAME...: those of ringrouter's filter counters, in order
    "$tmp/bin/ringrouter" stats --json -S "$(rr_sock ringrouter)" 2>/dev/null | python3 -c 'import json, sys
c = next((s["counters"] for s in json.load(sys.stdin)["services"] if s["name"] == "filter"), {})
print(" ".join(str(c.get(k, 0)) for k in sys.argv[1:]))' "$@"
}
ct_count() { # VARIANT: connections in its table now
    case $(kind_of "$1") in
    nftables) ip netns exec "${DUT[nftables]}" cat /proc/sys/net/netfilter/nf_conntrack_count ;;
    *) rr_counters ct_count ;;
    esac
}
ct_full() { # VARIANT: its table at 95 % of its bound or more
    local c
    c=$(ct_count "$1")
    [[ $c =~ ^[0-9]+$ ]] && [ "$c" -ge $((CT_MAX * 95 / 100)) ]
}
# ct_stats VARIANT: "TIME EARLY_DROPS FULL_DROPS NEW" so far (NEW: rr-filter's
# connections made; Linux counts none, nan), TIME when read.
ct_stats() {
    local t
    t=$(now_s)
    case $(kind_of "$1") in
    nftables)
        ip netns exec "${DUT[nftables]}" cat /proc/net/stat/nf_conntrack | python3 -c 'import sys
rows = [l.split() for l in sys.stdin if l.strip()]
col = {k: i for i, k in enumerate(rows[0])}
tot = lambda k: sum(int(r[col[k]], 16) for r in rows[1:]) if k in col else 0
print(sys.argv[1], tot("early_drop"), tot("drop"), "nan")' "$t"
        ;;
    *) echo "$t $(rr_counters ct_early_drop drop_table_full ct_new)" ;;
    esac
}
# bench/filter_net.sh's window's hook (WIN_HOOK) for these windows.
nc_hook() { # warm|begin|end|after VARIANT
    local m
    case $1 in
    warm)
        [ "$2" = ceiling ] || wait_for 150 ct_full "$2" ||
            echo "bench/filter: $2: the table holds $(ct_count "$2") of $CT_MAX after 15 s; measured anyway" >&2
        ;;
    begin) [ "$2" = ceiling ] || nc_c0=$(ct_stats "$2") ;;
    end) [ "$2" = ceiling ] || nc_c1=$(ct_stats "$2") ;;
    after)
        m=$([ "$2" = ceiling ] && echo ceiling || kind_of "$2")
        NC_NEXT[$m]=$(sed -n 's/.* next \([0-9]*\)$/\1/p' "$tmp/tg.out")
        [ -n "${NC_NEXT[$m]}" ] || die "$2: the generator gave no next tuple: $(cat "$tmp/tg.out")"
        ;;
    esac
}

# nc_step VARIANT TEST RUN PPS: one window of new connections (PPS 0: as
# fast as the generator can), and its table's line (TEST`ct`): early drops
# a second, drops for a full table a second, the connections at its end,
# new connections a second.
nc_step() {
    local v=$1 t=$2 m c
    m=$([ "$v" = ceiling ] && echo ceiling || kind_of "$v")
    local GEN_ARGS=(-N "${NC_NEXT[$m]:-0}") WIN_HOOK=nc_hook WIN_SECS=$NC_SECS
    if [ "$v" = ceiling ]; then
        window ceiling "$t" "$3" - "$4" "gzp$id" "szp$id" 10.69.1.2 10.69.1.1 "$(mac_of "$ns_sink" "szp$id")"
        return
    fi
    window "$v" "$t" "$3" - "$4" "${GDEV[$m]}" "${SDEV[$m]}" "${NET[$m]}.1.2" "${NET[$m]}.2.2" \
        "$(mac_of "${DUT[$m]}" "${ADEV[$m]}")"
    c=$(ct_count "$v")
    # shellcheck disable=SC2046 # four words
    record "$v$tag" "${t}ct" "$3" $(python3 -c 'import sys
a, b = (list(map(float, x.split())) for x in sys.argv[1:3])
dt = b[0] - a[0]
print("%.1f %.1f %s %.1f" % ((b[1] - a[1]) / dt, (b[2] - a[2]) / dt, sys.argv[3], (b[3] - a[3]) / dt))' "$nc_c0" "$nc_c1" "$c") 0
}
nc_last() { # VARIANT TEST RUN: "DELIVERED OFFERED" of that window, pps
    awk -F'\t' -v k="$1$tag" -v t="$2" -v r="$3" '$1 == k && $2 == t && $3 == r {d = $4; o = $5} END {printf "%.0f %.0f\n", d, o}' "$res"
}
nc_ceiling() { nc_step ceiling ncmax "$1" 0; } # RUN
nc_var() { # VARIANT RUN
    local v=$1 run=$2 d o lo=0 hi=0 r i
    nc_step "$v" ncmax "$run" 0
    read -r d o < <(nc_last "$v" ncmax "$run")
    [ "$((d * 100))" -lt "$((o * 99))" ] || return 0 # 99 % at the generator's most
    # From the most delivered, up by a quarter while 99 % arrives, down by
    # one while it does not, then halving the bracket; over when the
    # generator paces no faster than the dut forwards (held there).
    r=$d
    for i in $(seq "$NC_STEPS"); do
        [ "$r" -ge 1000 ] || break
        nc_step "$v" "nc$i" "$run" "$r"
        read -r d o < <(nc_last "$v" "nc$i" "$run")
        if [ "$((d * 100))" -ge "$((o * 99))" ]; then
            lo=$r
            [ "$((o * 10))" -ge "$((r * 9))" ] || break
        else
            hi=$r
        fi
        if [ "$hi" = 0 ]; then r=$((r * 5 / 4)); elif [ "$lo" = 0 ]; then r=$((r * 3 / 4)); else r=$(((lo + hi) / 2)); fi
    done
}
