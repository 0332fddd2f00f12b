/* SPDX-License-Identifier: MIT */
/*
 * supervisor/default_manifest.c: the manifest `ringrouter up` runs when it is
 * given no -c: the demo topology, two TAP ports each living in its own
 * network namespace (ns rr-demo-a -> rr-a -> router -> rr-b -> ns rr-demo-b),
 * no shaper. It goes through the same parser and checks as any file, and
 * the manifest unit test loads it, so it cannot rot.
 */
#include "supervisor/manifest.h"

const char sup_default_manifest[] =
    "; ringrouter's built-in demo manifest (ringrouter up without -c)\n"
    "[router]\n"
    "name = demo\n"
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
