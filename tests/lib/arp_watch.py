#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/lib/arp_watch.py: the ARP requests for one address seen on a
device, so that a test can tell a neighbour's fresh resolution (a broadcast
request: the router had no usable entry) from a re-validation (a unicast
probe of an entry it kept).

  arp_watch.py IFNAME TARGET LOG
      binds an AF_PACKET socket to IFNAME (run it in the device's
      namespace), creates LOG once it listens, then appends
      "TIME_US broadcast|unicast SENDER_IP" for every ARP request whose
      target address is TARGET (not TARGET's own gratuitous ARP), flushed
      per line. Exit 0 on SIGTERM.

Times are CLOCK_REALTIME in microseconds, bash's EPOCHREALTIME clock.
"""
import signal
import socket
import sys
import time

ETH_P_ARP = 0x0806


def main(a):
    if len(a) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    ifname, target, log = a
    want = socket.inet_aton(target)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
    s.bind((ifname, ETH_P_ARP))
    s.settimeout(0.2)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(log, "w", buffering=1) as f:
        while not stop:
            try:
                fr = s.recv(2048)
            except socket.timeout:
                continue
            except InterruptedError:
                continue
            # Ethernet (14) + ARP: op at 20, sender IP at 28, target IP at 38.
            if len(fr) < 42 or fr[20:22] != b"\x00\x01" or fr[38:42] != want or fr[28:32] == want:
                continue  # not a request for TARGET, or TARGET's own announcement
            kind = "broadcast" if fr[0:6] == b"\xff" * 6 else "unicast"
            f.write("%d %s %s\n" % (time.time_ns() // 1000, kind, socket.inet_ntoa(fr[28:32])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
