/* SPDX-License-Identifier: MIT */
/*
 * supervisor/default_manifest.c: the manifest `ringrouter up` runs when it is
 * given no -c: the demo topology, two TAP ports each living in its own
 * network namespace (ns rr-demo-a -> rr-a -> router -> rr-b -> ns rr-demo-b),
 * no shaper, and the large frames a TAP-only router can use (docs/drivers.md,
 * "Large frames"). It goes through the same parser and checks as any file, and
 * the manifest unit test loads it, so it cannot rot.
 */
#include "supervisor/manifest.h"

const char sup_default_manifest[] =
    "; ringrouter's built-in demo manifest (ringrouter up without -c)\n"
    "[router]\n"
    "name = demo\n"
    "; TAP ports only: 32 KB frames carry a 64 KB GSO packet in 2-3 frames\n"
    "frame_size = 32768\n"
    "pool_buffers = 4096\n"
    "\n"
    "[port a]\n"
    "driver = tap\n"
    "ifname = rr-a\n"
    "netns = rr-demo-a\n"
    "address = 10.1.0.1/24\n"
    "\n"
    "[port b]\n"
    "driver = tap\n"
    "ifname = rr-b\n"
    "netns = rr-demo-b\n"
    "address = 10.2.0.1/24\n";
