#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/tap_large_frames.sh: router_iperf.sh with frame_size = 32768,
# the pool a TAP-only router can use so that a 64 KB GSO packet travels as
# 3 frames instead of 33: the same TCP and UDP checks, and GSO chains of at
# most 3 frames.
RR_FRAME_SIZE=32768 exec "$(dirname "$0")/router_iperf.sh"
