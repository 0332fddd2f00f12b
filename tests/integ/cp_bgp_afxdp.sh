#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/cp_bgp_afxdp.sh: tests/integ/cp_bgp.sh over two AF_XDP ports
# on veth (the daemon's view is the same as on TAP ports: docs/routing.md,
# "AF_XDP ports"): BGP through port a, 1,000 prefixes in the FIB and
# forwarded, withdrawn within 1 s, gone after the hold time when the peer
# dies. Skips (77) without AF_XDP sockets.
CP_BGP_MODE=afxdp exec "$(dirname "$0")/cp_bgp.sh"
