#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/demo.sh [SECONDS]: the demo. Two network namespaces, ringrouter
# between them on two TAP ports (the built-in manifest), traffic from one to
# the other, and `ringrouter top` once a second. Everything it creates
# it removes on exit, Ctrl-C included. Run as root, from ./run demo.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-${DEMO_SECONDS:-20}}
bin=build/bin
run_dir=/run/ringrouter
sock=$run_dir/control.sock
log=$(mktemp /tmp/ringrouter-demo.XXXXXX)
sup_pid=
traffic_pid=

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root" >&2; exit 100; }

cleanup() {
    set +e
    [ -n "$traffic_pid" ] && kill "$traffic_pid" 2>/dev/null
    if [ -n "$sup_pid" ] && kill -0 "$sup_pid" 2>/dev/null; then
        kill -TERM "$sup_pid"
        for _ in $(seq 50); do kill -0 "$sup_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$sup_pid" 2>/dev/null
    fi
    ip netns del rr-demo-a 2>/dev/null
    ip netns del rr-demo-b 2>/dev/null
    echo "--- supervisor log (last lines) ---"
    tail -n 6 "$log"
    rm -f "$log"
}
trap cleanup EXIT

for ns in rr-demo-a rr-demo-b; do
    ip netns del "$ns" 2>/dev/null || true
    ip netns add "$ns"
    ip -n "$ns" link set lo up
done

echo "== ringrouter up (built-in manifest: port a 10.1.0.1/24 in rr-demo-a, port b 10.2.0.1/24 in rr-demo-b)"
$bin/ringrouter up 2>"$log" &
sup_pid=$!

# Wait, with a bound, until every service reports ready.
for _ in $(seq 100); do
    # Until the socket answers there is nothing to read: the table's STATE
    # column, not a parser that would trip over an empty answer.
    if states=$($bin/ringrouter status -S "$sock" 2>/dev/null) &&
        [ -z "$(awk 'NR > 1 && $2 != "up"' <<<"$states")" ] && [ "$(wc -l <<<"$states")" -gt 1 ]; then
        break
    fi
    kill -0 "$sup_pid" 2>/dev/null || { echo "demo: the supervisor exited:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
done
$bin/ringrouter status -S "$sock"

# The hosts' side of each TAP: an address and a default route via the router.
ip -n rr-demo-a addr add 10.1.0.2/24 dev rr-a
ip -n rr-demo-a link set rr-a up
ip -n rr-demo-a route add default via 10.1.0.1
ip -n rr-demo-b addr add 10.2.0.2/24 dev rr-b
ip -n rr-demo-b link set rr-b up
ip -n rr-demo-b route add default via 10.2.0.1

echo
echo "== ping 10.2.0.2 from rr-demo-a, through the router"
ip netns exec rr-demo-a ping -c 3 -i 0.2 -W 2 10.2.0.2

echo
echo "== traffic for ${secs}s, ringrouter top once a second"
if command -v iperf3 >/dev/null; then
    ip netns exec rr-demo-b iperf3 -s -1 -D -B 10.2.0.2 >/dev/null
    # Wait, with a bound, until the server listens.
    for _ in $(seq 50); do
        ip netns exec rr-demo-b ss -Hltn "sport = :5201" | grep -q LISTEN && break
        sleep 0.1
    done
    ip netns exec rr-demo-a iperf3 -c 10.2.0.2 -t "$secs" -i 0 --connect-timeout 3000 \
        >/tmp/ringrouter-demo-iperf.$$ 2>&1 &
else
    ip netns exec rr-demo-a ping -q -i 0.01 -w "$secs" 10.2.0.2 >/tmp/ringrouter-demo-iperf.$$ 2>&1 &
fi
traffic_pid=$!
for i in $(seq "$secs"); do
    # One frame of `top`: its rates are over the second it takes.
    frame=$($bin/ringrouter top --once -S "$sock" 2>&1) || true
    printf '\033[2J\033[H== ringrouter top, t=%ss of %ss\n%s\n' "$i" "$secs" "$frame"
done
wait "$traffic_pid" || true
traffic_pid=
echo
echo "== traffic result"
grep -E "sender|receiver|packets transmitted|rtt" /tmp/ringrouter-demo-iperf.$$ || cat /tmp/ringrouter-demo-iperf.$$
rm -f /tmp/ringrouter-demo-iperf.$$
