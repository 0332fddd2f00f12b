#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/tap_large_frames.sh: router_iperf.sh as docs/drivers.md
# advises a TAP-only router be set up: frame_size = 32768 (a 64 KB GSO packet
# travels as 3 frames instead of 33) and sched = batch for every service
# (checked: each runs SCHED_BATCH, restarted ones too). The same TCP, kill
# and flood checks, and GSO chains of at most 3 frames.
RR_FRAME_SIZE=32768 RR_SCHED=batch exec "$(dirname "$0")/router_iperf.sh"
