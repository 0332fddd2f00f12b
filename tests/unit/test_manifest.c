/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_manifest.c: supervisor/manifest.c, black-box. A table of
 * bad manifests, each with the exact error it must produce (line number
 * included); good manifests whose parsed values are checked (defaults,
 * units, resolved references, the implied service list); the built-in demo
 * manifest; and files under tests/manifests/, loaded by path, so that the
 * file name appears in the error. Run from the repository root (run.sh does).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/manifest.h"

/* Two TAP ports on lines 1-8; a case's own text starts on line 9. */
#define BASE                                                                                        \
    "[port a]\n"                                                                                    \
    "driver = tap\n"                                                                                \
    "ifname = rr-a\n"                                                                               \
    "address = 10.1.0.1/24\n"                                                                       \
    "[port b]\n"                                                                                    \
    "driver = tap\n"                                                                                \
    "ifname = rr-b\n"                                                                               \
    "address = 10.2.0.1/24\n"

/* A port on lines 1-4 whose line 4 is @ADDR_LINE. */
#define PORT_A(addr_line) "[port a]\ndriver = tap\nifname = rr-a\n" addr_line "\n"

/* A shaped port b with rate 100mbit: lines 9-10. */
#define SHAPER_B BASE "[shaper b]\nrate = 100mbit\n"

struct t_bad {
    const char *text;
    const char *error;
};

static const struct t_bad t_bad_cases[] = {
    /* INI syntax */
    {"[router]\nname demo\n", "t.ini:2: syntax error: expected \"key = value\", \"[section]\" or a comment"},
    {BASE "[port c\n", "t.ini:9: syntax error: \"[\" without a closing \"]\""},
    {"[router] extra\n", "t.ini:1: syntax error: text after \"]\""},
    {"mtu = 1500\n" BASE, "t.ini:1: \"mtu = 1500\" is outside any section"},
    {BASE "[router]\n= 5\n", "t.ini:10: syntax error: no key before \"=\""},
    {BASE "[router]\nname = " "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
     "t.ini:10: line is longer than 197 characters"},
    /* sections */
    {BASE "[prot c]\n",
     "t.ini:9: [prot c] unknown section: expected [router], [port NAME], [route PREFIX], [neigh ADDRESS], "
     "[shaper PORT], [class PORT NAME] or [service NAME]"},
    {"[port]\n", "t.ini:1: [port] expected [port NAME]"},
    {"[router main]\n", "t.ini:1: [router main] expected [router]"},
    {"[port Wan]\n", "t.ini:1: [port Wan] port name \"Wan\" is not valid: expected 1 to 15 of a-z 0-9 _ -"},
    {BASE "[port a]\n", "t.ini:9: [port a] duplicate port, first defined on line 1"},
    {"[router]\n" BASE "[router]\n", "t.ini:10: [router] duplicate section, first on line 1"},
    /* keys */
    {PORT_A("adress = 10.1.0.1/24"), "t.ini:4: [port a] adress: unknown key, did you mean address?"},
    {BASE "[router]\ncolour = blue\n", "t.ini:10: [router] colour: unknown key in [router] (see docs/manifest.md)"},
    {"[port a]\ndriver = tap\ndriver = afxdp\n", "t.ini:3: [port a] driver: duplicate key, first set on line 2"},
    {"[port a]\ndriver = tap\naddress = 10.1.0.1/24\n",
     "t.ini:1: [port a] ifname: missing, expected a network interface name"},
    {"[port a]\ndriver = tap\nifname = rr-a\n", "t.ini:1: [port a] address: missing, expected an IPv4 prefix such as 10.1.0.1/24"},
    {"[port a]\ndriver = tup\n", "t.ini:2: [port a] driver: \"tup\" is not tap or afxdp"},
    {"[port a]\nifname = rr/a\n",
     "t.ini:2: [port a] ifname: \"rr/a\" is not a network interface name (1 to 15 of A-Z a-z 0-9 _ - . @)"},
    {"[port a]\nifname = a-very-long-ifname\n",
     "t.ini:2: [port a] ifname: \"a-very-long-ifname\" is not a network interface name (1 to 15 of A-Z a-z 0-9 _ - . @)"},
    /* addresses and prefixes */
    {PORT_A("address = 10.1.0.1/33"), "t.ini:4: [port a] address: \"10.1.0.1/33\" is not an IPv4 prefix"},
    {PORT_A("address = 10.1.0.1"), "t.ini:4: [port a] address: \"10.1.0.1\" is not an IPv4 prefix"},
    {PORT_A("address = 10.01.0.1/24"), "t.ini:4: [port a] address: \"10.01.0.1/24\" is not an IPv4 prefix"},
    {PORT_A("address = 10.1.0.0/24"),
     "t.ini:4: [port a] address: 10.1.0.0/24 is the network address of 10.1.0.0/24, expected a host address"},
    {PORT_A("address = 10.1.0.255/24"),
     "t.ini:4: [port a] address: 10.1.0.255/24 is the broadcast address of 10.1.0.0/24, expected a host address"},
    {PORT_A("address = 127.0.0.1/8"), "t.ini:4: [port a] address: 127.0.0.1/8 is a loopback address"},
    {"[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n[port b]\ndriver = tap\nifname = rr-b\n"
     "address = 10.1.0.2/24\n",
     "t.ini:8: [port b] address: 10.1.0.2/24 overlaps port a's network 10.1.0.0/24 (line 4)"},
    {"[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n[port b]\ndriver = tap\nifname = rr-a\n"
     "address = 10.2.0.1/24\n",
     "t.ini:7: [port b] ifname: \"rr-a\" is already port a's interface (line 3)"},
    /* integers */
    {PORT_A("mtu = 1500x"), "t.ini:4: [port a] mtu: \"1500x\" is not an integer"},
    {PORT_A("mtu = 1500;jumbo"), "t.ini:4: [port a] mtu: \"1500;jumbo\" is not an integer"},
    {PORT_A("mtu = 0x5dc"), "t.ini:4: [port a] mtu: \"0x5dc\" is not an integer"},
    {PORT_A("mtu ="), "t.ini:4: [port a] mtu: \"\" is not an integer"},
    {PORT_A("mtu = 67"), "t.ini:4: [port a] mtu: 67 is out of range 68..65535"},
    {PORT_A("mtu = -1500"), "t.ini:4: [port a] mtu: -1500 is out of range 68..65535"},
    {BASE "[router]\npool_buffers = 99999999999999999999999\n",
     "t.ini:10: [router] pool_buffers: 99999999999999999999999 is out of range 1024..4194304"},
    {BASE "[router]\nring_size = 1000\n", "t.ini:10: [router] ring_size: 1000 is not a power of two"},
    {BASE "[router]\nhoard_pct = 0\n", "t.ini:10: [router] hoard_pct: 0 is out of range 1..100"},
    {BASE "[router]\nhoard_ms = 10\n", "t.ini:10: [router] hoard_ms: 10 is out of range 50..3600000"},
    {BASE "[router]\nframe_size = 3000\n", "t.ini:10: [router] frame_size: 3000 is not a power of two from 2048 to 32768"},
    {BASE "[router]\nframe_size = 65536\n", "t.ini:10: [router] frame_size: 65536 is not a power of two from 2048 to 32768"},
    {BASE "[router]\nframe_size = 1024\n", "t.ini:10: [router] frame_size: 1024 is not a power of two from 2048 to 32768"},
    {BASE "[router]\nframe_size = 4294969344\n",
     "t.ini:10: [router] frame_size: 4294969344 is not a power of two from 2048 to 32768"},
    {"[router]\nframe_size = 8192\n[port a]\ndriver = afxdp\nifname = eth1\naddress = 10.1.0.1/24\n",
     "t.ini:2: [router] frame_size: 8192 is for routers whose ports are all driver = tap: port a (line 3) is driver = "
     "afxdp, which takes 2048 or 4096"},
    {BASE "[router]\nframe_size = 32768\npool_buffers = 300000\n",
     "t.ini:11: [router] pool_buffers: 300000 buffers of 32768 bytes is 9375 MiB, more than the pool's limit of 8192 MiB"},
    {BASE "[router]\npool_buffers = 4194304\nframe_size = 4096\n",
     "t.ini:10: [router] pool_buffers: 4194304 buffers of 4096 bytes is 16384 MiB, more than the pool's limit of 8192 MiB"},
    {BASE "[service router]\nhang_ms = 5\n", "t.ini:10: [service router] hang_ms: 5 is out of range 10..60000"},
    {BASE "[service router]\nrestart_limit = 1001\n",
     "t.ini:10: [service router] restart_limit: 1001 is out of range 1..1000"},
    {BASE "[service router]\nsched = fifo\n", "t.ini:10: [service router] sched: \"fifo\" is not normal or batch"},
    {BASE "[service router]\ncpu_max_pct = 5\n",
     "t.ini:10: [service router] cpu_max_pct: 5: at least 10 (the kernel's smallest quota, 1 ms of each 10 ms period), "
     "or 0 for no limit"},
    {BASE "[service router]\ncpu_max_pct = 102401\n",
     "t.ini:10: [service router] cpu_max_pct: 102401 is out of range 0..102400"},
    {BASE "[router]\nrestart_cpu_max_pct = 5\n",
     "t.ini:10: [router] restart_cpu_max_pct: 5: at least 10 (the kernel's smallest quota, 1 ms of each 10 ms period), "
     "or 0 for no limit"},
    {BASE "[router]\nrestart_cpu_max_pct = 101\n", "t.ini:10: [router] restart_cpu_max_pct: 101 is out of range 0..100"},
    /* driver-specific keys */
    {"[port a]\ndriver = afxdp\nifname = eth1\naddress = 10.1.0.1/24\noffloads = csum\n",
     "t.ini:5: [port a] offloads: only for driver = tap, and port a is driver = afxdp"},
    {"[port a]\ndriver = afxdp\nifname = eth1\naddress = 10.1.0.1/24\npersist = yes\n",
     "t.ini:5: [port a] persist: only for driver = tap, and port a is driver = afxdp"},
    {BASE "persist = always\n", "t.ini:9: [port b] persist: \"always\" is not yes or no"},
    {"[port a]\nqueues = 4\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n",
     "t.ini:2: [port a] queues: only for driver = afxdp, and port a is driver = tap"},
    {"[port a]\ndriver = afxdp\nifname = eth1\naddress = 10.1.0.1/24\nmtu = 9000\n",
     "t.ini:5: [port a] mtu: 9000 does not fit a 2048-byte frame with driver = afxdp (at most 1778; "
     "frame_size = 4096 allows 3826)"},
    {PORT_A("offloads = tso4"), "t.ini:4: [port a] offloads: tso4, tso6 and uso need csum"},
    {PORT_A("offloads = csum, gso"), "t.ini:4: [port a] offloads: \"gso\" is not one of csum, tso4, tso6, uso or none"},
    {PORT_A("offloads = csum,,tso4"), "t.ini:4: [port a] offloads: \"csum,,tso4\" has an empty item"},
    {PORT_A("offloads = csum,"), "t.ini:4: [port a] offloads: \"csum,\" has an empty item"},
    {PORT_A("offloads = none, csum"), "t.ini:4: [port a] offloads: none cannot be combined with other offloads"},
    {"[port a]\ndriver = afxdp\nxdp_mode = fast\n",
     "t.ini:3: [port a] xdp_mode: \"fast\" is not auto, zerocopy, copy or skb"},
    /* MAC addresses */
    {PORT_A("mac = 02:00:00:00:00"), "t.ini:4: [port a] mac: \"02:00:00:00:00\" is not a MAC address (xx:xx:xx:xx:xx:xx)"},
    {PORT_A("mac = 01:00:5e:00:00:01"),
     "t.ini:4: [port a] mac: 01:00:5e:00:00:01 is a multicast address, expected a unicast MAC address"},
    {BASE "[neigh 10.1.0.9]\nmac = 00:00:00:00:00:00\n",
     "t.ini:10: [neigh 10.1.0.9] mac: 00:00:00:00:00:00 is all zeros, expected a unicast MAC address"},
    /* routes */
    {BASE "[route 10.3.0.1/16]\nvia = 10.1.0.2\n",
     "t.ini:9: [route 10.3.0.1/16] 10.3.0.1/16 has host bits set, did you mean 10.3.0.0/16?"},
    {BASE "[route 10.3.0.0]\nvia = 10.1.0.2\n", "t.ini:9: [route 10.3.0.0] \"10.3.0.0\" is not an IPv4 prefix"},
    {BASE "[route 0.0.0.0/0]\nvia = 10.9.0.1\n",
     "t.ini:10: [route 0.0.0.0/0] via: 10.9.0.1 is not on any port's network"},
    {BASE "[route 0.0.0.0/0]\nvia = 10.1.0.1\n",
     "t.ini:10: [route 0.0.0.0/0] via: 10.1.0.1 is the router's own address on port a"},
    {BASE "[route 0.0.0.0/0]\nvia = 10.2.0.255\n",
     "t.ini:10: [route 0.0.0.0/0] via: 10.2.0.255 is the broadcast address of port b's network 10.2.0.0/24"},
    /* A gateway on a port's (huge) network is still never a martian. */
    {"[port a]\ndriver = tap\nifname = rr-a\naddress = 100.0.0.1/1\n[route 10.9.0.0/16]\nvia = 127.0.0.1\n",
     "t.ini:6: [route 10.9.0.0/16] via: 127.0.0.1 is a loopback address"},
    {BASE "[route 10.5.0.0/16]\nvia = 10.1.0.2\nport = a\n",
     "t.ini:11: [route 10.5.0.0/16] port: give either via or port, not both"},
    {BASE "[route 10.5.0.0/16]\n",
     "t.ini:9: [route 10.5.0.0/16] via: missing, expected a gateway address (or port = NAME for a directly "
     "connected route)"},
    {BASE "[route 10.5.0.0/16]\nport = c\n", "t.ini:10: [route 10.5.0.0/16] port: no port \"c\""},
    {BASE "[route 10.5.0.0/16]\nvia = 10.1.0.2\n[route 10.5.0.0/16]\nvia = 10.2.0.2\n",
     "t.ini:11: [route 10.5.0.0/16] duplicate route, first on line 9"},
    {BASE "[route 10.2.0.0/24]\nport = b\n",
     "t.ini:9: [route 10.2.0.0/24] duplicates the connected route of port b (line 8)"},
    /* neighbours */
    {BASE "[neigh 10.7.0.2]\nmac = 02:00:00:00:00:01\n",
     "t.ini:9: [neigh 10.7.0.2] 10.7.0.2 is not on any port's network"},
    {BASE "[neigh 10.1.0.2]\nmac = 02:00:00:00:00:01\nport = b\n",
     "t.ini:11: [neigh 10.1.0.2] port: 10.1.0.2 is not on port b's network 10.2.0.0/24"},
    {BASE "[neigh 10.1.0.2]\nport = a\n", "t.ini:9: [neigh 10.1.0.2] mac: missing, expected a MAC address"},
    /* shapers and classes */
    {BASE "[shaper b]\nrate = 100mbits\n",
     "t.ini:10: [shaper b] rate: \"100mbits\" has an unknown unit \"mbits\", expected bit, kbit, mbit, gbit, "
     "tbit, bps, kbps, mbps, gbps or tbps"},
    {BASE "[shaper b]\nrate = 100\n",
     "t.ini:10: [shaper b] rate: \"100\" has no unit, expected a rate such as 100mbit (bit, kbit, mbit, gbit, "
     "tbit, bps, kbps, mbps, gbps or tbps)"},
    {BASE "[shaper b]\nrate = 0mbit\n", "t.ini:10: [shaper b] rate: 0mbit is out of range 1kbit..1tbit"},
    {BASE "[shaper b]\nrate = 1.0000005kbit\n",
     "t.ini:10: [shaper b] rate: 1.0000005kbit is not a whole number of bits per second"},
    {BASE "[shaper b]\nburst = 64k\n", "t.ini:9: [shaper b] rate: missing, expected a rate such as 100mbit"},
    {SHAPER_B "burst = 1k\n", "t.ini:11: [shaper b] burst: 1024 bytes is less than one full frame (1514 bytes at mtu 1500)"},
    {SHAPER_B "burst = 64q\n", "t.ini:11: [shaper b] burst: \"64q\" has an unknown unit \"q\", expected b, k, kb, m or mb"},
    {BASE "[shaper c]\nrate = 1mbit\n", "t.ini:9: [shaper c] no port \"c\""},
    {SHAPER_B "[class b voice]\nrate = 10mbit\nceil = 5mbit\nmatch = dscp 46\n[class b bulk]\nrate = 1mbit\ndefault = yes\n",
     "t.ini:13: [class b voice] ceil: 5mbit is below rate 10mbit"},
    {SHAPER_B "[class b voice]\nrate = 10mbit\nceil = 1gbit\nmatch = dscp 46\n",
     "t.ini:13: [class b voice] ceil: 1gbit is above the port's rate 100mbit (line 10)"},
    {SHAPER_B "[class b voice]\nrate = 200mbit\n",
     "t.ini:12: [class b voice] rate: 200mbit is above the port's rate 100mbit (line 10)"},
    {SHAPER_B "[class b one]\nrate = 1mbit\ndefault = yes\n[class b two]\nrate = 1mbit\ndefault = yes\n",
     "t.ini:16: [class b two] default: class one (line 11) is already port b's default class"},
    {SHAPER_B "[class b voice]\nrate = 10mbit\nmatch = dscp 46\n",
     "t.ini:9: [shaper b] no class of port b has default = yes; exactly one must"},
    {SHAPER_B "[class b voice]\nrate = 60mbit\nmatch = dscp 46\n[class b bulk]\nrate = 50mbit\ndefault = yes\n",
     "t.ini:15: [class b bulk] rate: the classes of port b guarantee 110mbit in all, above the port's rate 100mbit"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\n",
     "t.ini:11: [class b voice] match: missing, expected match rules (or default = yes)"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = tos 5\n",
     "t.ini:13: [class b voice] match: \"tos 5\" is not a match term: expected dscp, proto, sport, dport, src or dst"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = dscp 64\n",
     "t.ini:13: [class b voice] match: \"dscp 64\": expected a DSCP value 0..63"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = proto icmp, dport 53\n",
     "t.ini:13: [class b voice] match: sport and dport need proto tcp or udp"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = src 10.1.0.1/24\n",
     "t.ini:13: [class b voice] match: \"src 10.1.0.1/24\": 10.1.0.1/24 has host bits set, did you mean 10.1.0.0/24?"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = dport 80, dport 443\n",
     "t.ini:13: [class b voice] match: dport is given twice"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = src 2001:db8:1::1/48\n",
     "t.ini:13: [class b voice] match: \"src 2001:db8:1::1/48\": 2001:db8:1::1/48 has host bits set, did you mean "
     "2001:db8:1::/48?"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = dst 2001:DB8::/32\n",
     "t.ini:13: [class b voice] match: \"dst 2001:DB8::/32\": 2001:DB8::/32 is not in canonical form (RFC 5952): "
     "write 2001:db8::/32"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = dst 2001:db8::/129\n",
     "t.ini:13: [class b voice] match: \"dst 2001:db8::/129\": expected an IPv6 prefix such as 2001:db8::/32"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = src 10.1.0.0/24, dst 2001:db8::/32\n",
     "t.ini:13: [class b voice] match: src and dst are of different families (IPv4 and IPv6): no packet has both; "
     "use two classes"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = src 2001:db8::/32, src 10.1.0.0/24\n",
     "t.ini:13: [class b voice] match: src is given twice"},
    {SHAPER_B "[class b voice]\nrate = 1mbit\nmatch = dscp 46\ndefault = maybe\n",
     "t.ini:14: [class b voice] default: \"maybe\" is not yes or no"},
    {BASE "[class a voice]\nrate = 1mbit\ndefault = yes\n", "t.ini:9: [class a voice] port a has no [shaper a] section"},
    /* services */
    {BASE "[service frobber]\n",
     "t.ini:9: [service frobber] \"frobber\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE, "
     "shaper-PORT or (with [router] control_netns) cp-PORT"},
    /* the control namespace (supervisor/cp.c) */
    {BASE "[service cp-a]\n",
     "t.ini:9: [service cp-a] \"cp-a\" is not a service: expected router, driver-PORT, driver-PORT.QUEUE, "
     "shaper-PORT or (with [router] control_netns) cp-PORT"},
    {BASE "[router]\ncontrol_netns = rr-test-no-such-netns\n",
     "t.ini:10: [router] control_netns: /run/netns/rr-test-no-such-netns: No such file or directory (create it "
     "with: ip netns add rr-test-no-such-netns)"},
    {"[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\ncp_ifname = cp0\n",
     "t.ini:5: [port a] cp_ifname: no [router] control_netns to put it in"},
    {BASE "[service driver-b.1]\n", "t.ini:9: [service driver-b.1] port b has one queue: its only driver is driver-b"},
    {BASE "[port x]\ndriver = afxdp\nifname = xx\naddress = 10.3.0.1/24\nqueues = 2\n[service driver-x.2]\n",
     "t.ini:14: [service driver-x.2] port x has 2 queues (line 13): its drivers are driver-x and driver-x.1 to "
     "driver-x.1"},
    {BASE "[port x]\ndriver = afxdp\nifname = xx\naddress = 10.3.0.1/24\nqueues = 2\n[service driver-x.01]\n",
     "t.ini:14: [service driver-x.01] \"driver-x.01\" is not a service: expected router, driver-PORT, "
     "driver-PORT.QUEUE (QUEUE from 1) or shaper-PORT"},
    {BASE "[port x]\ndriver = afxdp\nifname = xx\naddress = 10.3.0.1/24\nqueues = 2\n[service shaper-x.1]\n",
     "t.ini:14: [service shaper-x.1] \"shaper-x.1\" is not a service: expected router, driver-PORT, "
     "driver-PORT.QUEUE (QUEUE from 1) or shaper-PORT"},
    {BASE "[port x]\ndriver = afxdp\nifname = xx\naddress = 10.3.0.1/24\nqueues = 15\n",
     "t.ini:13: [port x] queues: the ports' queues add up to 17 driver instances; the router takes at most 16"},
    {BASE "[service driver-c]\n", "t.ini:9: [service driver-c] no port \"c\""},
    {BASE "[service shaper-a]\n", "t.ini:9: [service shaper-a] port a has no [shaper a] section"},
    {BASE "[service router]\nrestart = sometimes\n",
     "t.ini:10: [service router] restart: \"sometimes\" is not always, on-failure or never"},
    {BASE "[service router]\nrestart_window = 10min\n",
     "t.ini:10: [service router] restart_window: \"10min\" has an unknown unit \"min\", expected ms or s"},
    {BASE "[service router]\nrestart_window = 50ms\n",
     "t.ini:10: [service router] restart_window: 50ms is out of range 100ms..3600s"},
    {BASE "[service driver-a]\ncpu = 1024\n", "t.ini:10: [service driver-a] cpu: 1024 is out of range 0..1023"},
    {BASE "[service router]\n[service router]\n", "t.ini:10: [service router] duplicate section, first on line 9"},
    /* router */
    {BASE "[router]\nuser = no-such-user-rr\n", "t.ini:10: [router] user: no such user \"no-such-user-rr\""},
    /* uids: each service's own; user is the other, shared, way */
    {BASE "[router]\nuids = 5000-5001\n",
     "t.ini:10: [router] uids: 5000-5001 holds 2 uids, and the manifest has 3 services: each needs its own"},
    {SHAPER_B "[router]\nuids = 5000-5002\n",
     "t.ini:12: [router] uids: 5000-5002 holds 3 uids, and the manifest has 4 services: each needs its own"},
    {BASE "[router]\nuids = 7-7\n", "t.ini:10: [router] uids: 7-7 holds 1 uid, and the manifest has 3 services: each needs its own"},
    {BASE "[router]\nuids = 0-100\n", "t.ini:10: [router] uids: 0-100 includes uid 0, root"},
    {BASE "[router]\nuids = 65000-65534\n",
     "t.ini:10: [router] uids: 65000-65534 includes uid 65534, nobody: the kernel's overflow uid"},
    {BASE "[router]\nuids = 65535-70000\n",
     "t.ini:10: [router] uids: 65535-70000 includes uid 65535, which is -1 to the 16-bit system calls"},
    {BASE "[router]\nuids = 4294967290-4294967295\n",
     "t.ini:10: [router] uids: 4294967290-4294967295 is out of range 1..2147483647"},
    {BASE "[router]\nuids = 2147483640-2147483648\n",
     "t.ini:10: [router] uids: 2147483640-2147483648 is out of range 1..2147483647"},
    {BASE "[router]\nuids = 100-99999999999999999999999\n",
     "t.ini:10: [router] uids: 100-99999999999999999999999 is out of range 1..2147483647"},
    {BASE "[router]\nuids = 6000-5000\n", "t.ini:10: [router] uids: 6000-5000 is backwards: FIRST must not be above LAST"},
    {BASE "[router]\nuids = 5000\n",
     "t.ini:10: [router] uids: \"5000\" is not a uid range: expected FIRST-LAST, such as 1900000000-1900065535"},
    {BASE "[router]\nuids = 5000-\n",
     "t.ini:10: [router] uids: \"5000-\" is not a uid range: expected FIRST-LAST, such as 1900000000-1900065535"},
    {BASE "[router]\nuids = -5-10\n",
     "t.ini:10: [router] uids: \"-5-10\" is not a uid range: expected FIRST-LAST, such as 1900000000-1900065535"},
    {BASE "[router]\nuids = 5000 - 6000\n",
     "t.ini:10: [router] uids: \"5000 - 6000\" is not a uid range: expected FIRST-LAST, such as 1900000000-1900065535"},
    {BASE "[router]\nuids =\n",
     "t.ini:10: [router] uids: \"\" is not a uid range: expected FIRST-LAST, such as 1900000000-1900065535"},
    {BASE "[router]\nuser = nobody\nuids = 5000-5100\n",
     "t.ini:11: [router] uids: give either user (every service runs as that one user) or uids (each service its own "
     "uid), not both"},
    {BASE "[router]\nuids = 5000-5100\nname = x\nuser = no-such-user-rr\n",
     "t.ini:12: [router] user: give either user (every service runs as that one user) or uids (each service its own "
     "uid), not both"},
    {BASE "[router]\ngroup = users\n",
     "t.ini:10: [router] group: only with user: without it, each service runs with its own uid as its gid"},
    {BASE "[router]\nuids = 5000-5100\ngroup = users\n",
     "t.ini:11: [router] group: only with user: without it, each service runs with its own uid as its gid"},
    {BASE "[router]\nrun_dir = run/rr\n", "t.ini:10: [router] run_dir: \"run/rr\" is not an absolute path"},
    {BASE "[router]\nstate_dir = var/lib/rr\n", "t.ini:10: [router] state_dir: \"var/lib/rr\" is not an absolute path"},
    {BASE "[router]\nstages = yes\n", "t.ini:10: [router] stages: \"yes\" is not on or off"},
    {BASE "[router]\nstages = On\n", "t.ini:10: [router] stages: \"On\" is not on or off"},
    {BASE "[router]\nstages = on\nstages = off\n", "t.ini:11: [router] stages: duplicate key, first set on line 10"},
    /* IPv6: address6 (line 9 belongs to port b), [route] and [neigh] */
    {BASE "address6 = 2001:db8:2::1\n",
     "t.ini:9: [port b] address6: \"2001:db8:2::1\" is not an IPv6 prefix such as 2001:db8:1::1/64"},
    {BASE "address6 = 2001:DB8:2::1/64\n",
     "t.ini:9: [port b] address6: \"2001:DB8:2::1/64\" is not in canonical form (RFC 5952): write 2001:db8:2::1/64"},
    {BASE "address6 = 2001:db8:2::1/129\n",
     "t.ini:9: [port b] address6: \"2001:db8:2::1/129\" is not an IPv6 prefix such as 2001:db8:1::1/64"},
    {BASE "address6 = ::1/128\n", "t.ini:9: [port b] address6: ::1/128 is the loopback address ::1"},
    {BASE "address6 = ff02::1/64\n", "t.ini:9: [port b] address6: ff02::1/64 is a multicast address"},
    {BASE "address6 = 2001:db8:2::/64\n",
     "t.ini:9: [port b] address6: 2001:db8:2::/64 is the subnet-router anycast address of 2001:db8:2::/64, expected a "
     "host address"},
    {BASE "address6 = fe80::1/10\n",
     "t.ini:9: [port b] address6: fe80::1/10: a link-local address takes /64 (fe80::/64 is the link's prefix)"},
    {BASE "address6 = fe80::1/64, fe80::2/64\n",
     "t.ini:9: [port b] address6: fe80::2/64: the port already has the link-local address fe80::1 (line 9)"},
    {BASE "address6 = 2001:db8:2::1/64\naddress6 = 2001:db8:2::1/64\n",
     "t.ini:10: [port b] address6: 2001:db8:2::1/64 is already this port's address (line 9)"},
    {BASE "address6 = 2001:db8:2::1/64\n[port c]\ndriver = tap\nifname = rr-c\naddress = 10.3.0.1/24\n"
          "address6 = 2001:db8::1/32\n",
     "t.ini:14: [port c] address6: 2001:db8::1/32 overlaps port b's network 2001:db8:2::/64 (line 9)"},
    {BASE "address6 = 2001:db8:2::1/64\n[route 2001:db8:9::1/48]\nvia = 2001:db8:2::2\n",
     "t.ini:10: [route 2001:db8:9::1/48] 2001:db8:9::1/48 has host bits set, did you mean 2001:db8:9::/48?"},
    {BASE "[route 2001:db8:9:0::/48]\nport = b\n",
     "t.ini:9: [route 2001:db8:9:0::/48] \"2001:db8:9:0::/48\" is not in canonical form (RFC 5952): write [route "
     "2001:db8:9::/48]"},
    {BASE "[route fe80::/64]\nport = b\n",
     "t.ini:9: [route fe80::/64] fe80::/64 is link-local: it is never routed (RFC 4291 §2.5.6)"},
    {BASE "address6 = 2001:db8:2::1/64\n[route 2001:db8:9::/48]\nvia = 10.2.0.9\n",
     "t.ini:11: [route 2001:db8:9::/48] via: \"10.2.0.9\" is not an IPv6 address (the route's prefix is IPv6)"},
    {BASE "address6 = 2001:db8:2::1/64\n[route 2001:db8:9::/48]\nvia = 2001:db8:3::2\n",
     "t.ini:11: [route 2001:db8:9::/48] via: 2001:db8:3::2 is not on any port's IPv6 network"},
    {BASE "address6 = 2001:db8:2::1/64\n[route 2001:db8:9::/48]\nvia = 2001:db8:2::1\n",
     "t.ini:11: [route 2001:db8:9::/48] via: 2001:db8:2::1 is the router's own address on port b"},
    {BASE "[route 2001:db8:9::/48]\nvia = fe80::9\n",
     "t.ini:10: [route 2001:db8:9::/48] via: fe80::9 is link-local: add port = NAME to say which link it is on"},
    {BASE "address6 = 2001:db8:2::1/64\n[route 2001:db8:9::/48]\nvia = 2001:db8:2::2\nport = a\n",
     "t.ini:12: [route 2001:db8:9::/48] port: the gateway 2001:db8:2::2 is on port b, not a"},
    {BASE "address6 = 2001:db8:2::1/64\n[route 2001:db8:2::/64]\nport = b\n",
     "t.ini:10: [route 2001:db8:2::/64] duplicates the connected route of port b (line 9)"},
    {BASE "[neigh fe80::7]\nmac = 02:00:00:00:00:07\n",
     "t.ini:9: [neigh fe80::7] port: missing: fe80::7 is link-local, say which port's link it is on"},
    {BASE "[neigh 2001:db8:7::7]\nmac = 02:00:00:00:00:07\n",
     "t.ini:9: [neigh 2001:db8:7::7] 2001:db8:7::7 is not on any port's IPv6 network"},
    {BASE "[neigh ff02::1]\nmac = 02:00:00:00:00:07\n",
     "t.ini:9: [neigh ff02::1] ff02::1 is a multicast address, expected a neighbour's unicast address"},
    /* the whole file */
    {"[router]\nname = lonely\n", "t.ini: no ports: a manifest needs at least one [port NAME] section"},
    {"", "t.ini: no ports: a manifest needs at least one [port NAME] section"},
};

#define NBAD (sizeof t_bad_cases / sizeof t_bad_cases[0])

static void test_manifest_bad(void **state)
{
    (void)state;
    size_t failed = 0;
    for (size_t i = 0; i < NBAD; i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", t_bad_cases[i].text, &m, &err);
        if (rc != -EINVAL || strcmp(err.msg, t_bad_cases[i].error) != 0) {
            print_error("case %zu: rc %d\n  want: %s\n  got:  %s\n", i, rc, t_bad_cases[i].error, err.msg);
            failed++;
        }
        /* a failed load leaves nothing to free, and freeing is still safe */
        assert_null(m.ports);
        sup_manifest_free(&m);
    }
    assert_int_equal(failed, 0);
    assert_true(NBAD >= 25);
}

/* IPv6: several addresses per port (repeated key and list), the derived
 * EUI-64 link-local address where none is given, routes with a global, a
 * link-local (with its port) or no gateway, an IPv6 static neighbour. */
static void test_manifest_ipv6(void **state)
{
    (void)state;
    static const char text[] = "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"
                               "mac = 02:00:00:00:00:0a\naddress6 = 2001:db8:1::1/64\n"
                               "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n"
                               "address6 = 2001:db8:2::1/64, fd00:2::1/64\naddress6 = fe80::1/64\n"
                               "[route 2001:db8:9::/48]\nvia = 2001:db8:2::2\n"
                               "[route 2001:db8:a::/48]\nvia = fe80::5\nport = b\n"
                               "[route ::/0]\nport = a\n"
                               "[route 10.9.0.0/16]\nvia = 10.2.0.2\n"
                               "[neigh 2001:db8:1::7]\nmac = 02:00:00:00:00:07\n"
                               "[neigh fe80::8]\nmac = 02:00:00:00:00:08\nport = b\n";
    struct sup_manifest m;
    struct sup_manifest_err err;
    if (sup_manifest_load_string("t.ini", text, &m, &err) != 0) {
        print_error("%s\n", err.msg);
        fail();
    }
    uint8_t want[16];
    char buf[64];
    /* port a: its address, then fe80::EUI-64 of 02:00:00:00:00:0a */
    assert_int_equal(m.ports[0].naddr6, 2);
    assert_string_equal(sup_addr6_str(m.ports[0].addr6[0].addr, buf, sizeof buf), "2001:db8:1::1");
    assert_string_equal(sup_addr6_str(m.ports[0].addr6[1].addr, buf, sizeof buf), "fe80::ff:fe00:a");
    assert_int_equal(m.ports[0].addr6[1].len, 64);
    assert_int_equal(m.ports[0].addr6_line[1], 0);
    /* port b: three given, the link-local one among them: none derived */
    assert_int_equal(m.ports[1].naddr6, 3);
    assert_string_equal(sup_addr6_str(m.ports[1].addr6[1].addr, buf, sizeof buf), "fd00:2::1");
    assert_int_equal(m.ports[1].addr6_line[2], 12);
    assert_int_equal(m.nroutes, 4);
    assert_true(m.routes[0].v6 && !m.routes[0].direct && m.routes[0].port == 1);
    assert_true(sup_parse_addr6("2001:db8:2::2", want, NULL, 0));
    assert_memory_equal(m.routes[0].via6, want, 16);
    assert_true(m.routes[1].v6 && m.routes[1].port == 1 && sup_ll6(m.routes[1].via6));
    assert_true(m.routes[2].v6 && m.routes[2].direct && m.routes[2].port == 0 && m.routes[2].prefix6.len == 0);
    assert_false(m.routes[3].v6);
    assert_int_equal(m.nneighs, 2);
    assert_true(m.neighs[0].v6 && m.neighs[0].port == 0);
    assert_true(m.neighs[1].v6 && m.neighs[1].port == 1);
    sup_manifest_free(&m);
}

/* The error's line field matches the number in the message. */
static void test_manifest_err_line(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    assert_int_equal(sup_manifest_load_string("x.ini", PORT_A("mtu = 1"), &m, &err), -EINVAL);
    assert_int_equal(err.line, 4);
    assert_int_equal(sup_manifest_load_string("x.ini", "", &m, &err), -EINVAL);
    assert_int_equal(err.line, 0);
    /* err may be NULL */
    assert_int_equal(sup_manifest_load_string("x.ini", "", &m, NULL), -EINVAL);
}

static void test_manifest_default(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_string(SUP_DEFAULT_MANIFEST_NAME, sup_default_manifest, &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(m.router.name, "demo");
    assert_int_equal(m.router.pool_buffers, 4096);
    assert_int_equal(m.router.frame_size, 32768);
    assert_int_equal(m.router.ring_size, 1024);
    assert_int_equal(m.router.icmp_rate, 1000);
    assert_int_equal(m.router.icmp_burst, 50);
    assert_int_equal(m.router.hoard_pct, 50);
    assert_int_equal(m.router.hoard_ms, 1000);
    assert_false(m.router.stages);
    assert_string_equal(m.router.run_dir, "/run/ringrouter");
    assert_string_equal(m.router.state_dir, ""); /* run_dir's (supervisor/route.c) */
    /* No shared user: each service its own uid from the default range,
     * in the service table's order. */
    assert_string_equal(m.router.user, "");
    assert_string_equal(m.router.group, "");
    assert_int_equal(m.router.uids.first, 1900000000u);
    assert_int_equal(m.router.uids.last, 1900065535u);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_UIDS], 0);

    assert_int_equal(m.nports, 2);
    const struct sup_port *a = &m.ports[0], *b = &m.ports[1];
    assert_string_equal(a->name, "a");
    assert_int_equal(a->driver, SUP_DRIVER_TAP);
    assert_string_equal(a->ifname, "rr-a");
    assert_string_equal(a->netns, "rr-demo-a");
    assert_int_equal(a->address.addr, 0x0a010001);
    assert_int_equal(a->address.len, 24);
    assert_int_equal(a->mtu, 1500);
    assert_int_equal(a->offloads, SUP_OFFLOAD_CSUM | SUP_OFFLOAD_TSO4 | SUP_OFFLOAD_TSO6);
    assert_int_equal(a->rx_inflight, 32);
    assert_false(a->has_mac);
    assert_int_equal(a->shaper, -1);
    assert_string_equal(b->name, "b");
    assert_string_equal(b->ifname, "rr-b");
    assert_string_equal(b->netns, "rr-demo-b");
    assert_int_equal(b->address.addr, 0x0a020001);
    assert_int_equal(m.nroutes + m.nneighs + m.nshapers + m.nclasses, 0);

    assert_int_equal(m.nservices, 3);
    assert_string_equal(m.services[0].name, "router");
    assert_int_equal(m.services[0].kind, SUP_SVC_ROUTER);
    assert_string_equal(m.services[1].name, "driver-a");
    assert_int_equal(m.services[1].kind, SUP_SVC_DRIVER);
    assert_int_equal(m.services[1].port, 0);
    assert_string_equal(m.services[2].name, "driver-b");
    for (size_t i = 0; i < m.nservices; i++) {
        const struct sup_service *s = &m.services[i];
        assert_int_equal(s->restart, SUP_RESTART_ALWAYS);
        assert_int_equal(s->hang_ms, 200);
        assert_int_equal(s->restart_limit, 5);
        assert_int_equal(s->restart_window_ms, 10000);
        assert_int_equal(s->cpu, -1);
        assert_int_equal(s->poll_us, 0);
        assert_int_equal(s->sched, SUP_SCHED_NORMAL);
        assert_int_equal(s->src.line, 0);
        assert_int_equal(s->uid, 1900000000u + i);
    }
    assert_int_equal(sup_manifest_port(&m, "b"), 1);
    assert_int_equal(sup_manifest_port(&m, "c"), -1);
    assert_int_equal(sup_manifest_service(&m, "driver-b"), 2);
    sup_manifest_free(&m);
    assert_null(m.ports);
    assert_int_equal(m.nports, 0);
}

/* Everything at once, in awkward but legal spelling: a BOM, CRLF line
 * ends, indented keys, both comment styles, inline comments, "key: value". */
static const char t_full[] =
    "\xef\xbb\xbf# a full manifest\r\n"
    "[router]\r\n"
    "  name = edge1 ; inline comment\r\n"
    "  pool_buffers = 65536\n"
    "  frame_size = 4096\n"
    "  ring_size = 4096\n"
    "  user = nobody\n"
    "  run_dir = /tmp/rr-test\n"
    "  icmp_rate = 0\n"
    "  icmp_burst: 10\n"
    "\n"
    "[ port   lan ]   ; the LAN\n"
    "driver = afxdp\n"
    "ifname = veth-lan\n"
    "address = 192.168.7.1/30\n"
    "mtu = 3000\n"
    "xdp_mode = copy\n"
    "steer = all\n"
    "queues = 2\n"
    "mac = 02:AA:bb:cc:dd:01\n"
    "\n"
    "[port wan]\n"
    "driver = tap\n"
    "ifname = rr-wan\n"
    "address = 10.2.0.1/31\n"
    "netns = wan.ns\n"
    "offloads = none\n"
    "rx_inflight = 64\n"
    "mtu = 9000\n"
    "\n"
    "[port up-1]\n"
    "driver = tap\n"
    "ifname = rr-up\n"
    "address = 172.16.0.1/16\n"
    "offloads = csum , uso\n"
    "\n"
    "[route 0.0.0.0/0]\n"
    "via = 10.2.0.0\n"
    "[route 198.51.100.0/24]\n"
    "port = lan\n"
    "[route 203.0.113.128/25]\n"
    "via = 172.16.200.9\n"
    "\n"
    "[neigh 192.168.7.2]\n"
    "mac = 02:00:00:00:00:02\n"
    "[neigh 172.16.0.9]\n"
    "mac = 02:00:00:00:00:09\n"
    "port = up-1\n"
    "\n"
    "[class wan voice] ; before its shaper: order does not matter\n"
    "rate = 10mbit\n"
    "ceil = 20mbit\n"
    "prio = 0\n"
    "match = dscp 46, proto udp, dport 5000-5010, src 10.1.0.0/24\n"
    "[shaper wan]\n"
    "rate = 12.5mbps\n"
    "overhead = 38\n"
    "[class wan bulk]\n"
    "rate = 1.5mbit\n"
    "default = yes\n"
    "[shaper up-1]\n"
    "rate = 1gbit\n"
    "burst = 1.5k\n"
    "\n"
    "[service router]\n"
    "restart = on-failure\n"
    "hang_ms = 500\n"
    "restart_limit = 3\n"
    "restart_window = 2\n"
    "cpu = 1\n"
    "poll_us = 50\n"
    "sched = batch\n"
    "cpu_max_pct = 150\n"
    "[service shaper-wan]\n"
    "restart_window = 500ms\n"
    "[service driver-lan]\n"
    "restart = never\n";

/* Frames past 4096 bytes are for TAP-only routers: a 64 KB GSO packet in 3 frames. */
static void test_manifest_large_frames(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_string("t.ini", BASE "[router]\nframe_size = 32768\npool_buffers = 4096\n", &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(m.router.frame_size, 32768);
    assert_int_equal(m.router.pool_buffers, 4096);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_FRAME_SIZE], 10);
    sup_manifest_free(&m);
}

static void test_manifest_full(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_string("full.ini", t_full, &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);

    assert_string_equal(m.router.name, "edge1");
    assert_int_equal(m.router.src.line, 2);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_NAME], 3);
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_GROUP], 0);
    assert_int_equal(m.router.pool_buffers, 65536);
    assert_int_equal(m.router.frame_size, 4096);
    assert_int_equal(m.router.ring_size, 4096);
    /* user: every service runs as nobody, with nobody's primary group; no
     * service has a uid of its own. */
    assert_string_equal(m.router.user, "nobody");
    assert_true(m.router.group[0] != '\0');
    assert_int_equal(m.router.src.key_line[SUP_ROUTER_UIDS], 0);
    assert_string_equal(m.router.run_dir, "/tmp/rr-test");
    assert_int_equal(m.router.icmp_rate, 0);
    assert_int_equal(m.router.icmp_burst, 10);

    assert_int_equal(m.nports, 3);
    const struct sup_port *lan = &m.ports[0], *wan = &m.ports[1], *up = &m.ports[2];
    assert_string_equal(lan->name, "lan");
    assert_string_equal(lan->src.section, "port lan");
    assert_int_equal(lan->src.line, 12);
    assert_int_equal(lan->driver, SUP_DRIVER_AFXDP);
    assert_int_equal(lan->address.addr, 0xc0a80701);
    assert_int_equal(lan->address.len, 30);
    assert_int_equal(lan->mtu, 3000);
    assert_int_equal(lan->xdp_mode, SUP_XDP_COPY);
    assert_int_equal(lan->steer, SUP_STEER_ALL);
    assert_int_equal(lan->queues, 2);
    assert_true(lan->has_mac);
    assert_memory_equal(lan->mac, ((uint8_t[]){0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01}), 6);
    assert_string_equal(lan->netns, "");
    assert_int_equal(wan->driver, SUP_DRIVER_TAP);
    assert_int_equal(wan->address.len, 31);
    assert_int_equal(wan->offloads, 0);
    assert_int_equal(wan->rx_inflight, 64);
    assert_int_equal(wan->mtu, 9000);
    assert_string_equal(wan->netns, "wan.ns");
    assert_int_equal(wan->xdp_mode, SUP_XDP_AUTO); /* defaults of the other driver stay harmless */
    assert_int_equal(up->offloads, SUP_OFFLOAD_CSUM | SUP_OFFLOAD_USO);

    assert_int_equal(m.nroutes, 3);
    assert_int_equal(m.routes[0].prefix.addr, 0);
    assert_int_equal(m.routes[0].prefix.len, 0);
    assert_false(m.routes[0].direct);
    assert_int_equal(m.routes[0].via, 0x0a020000); /* on a /31 both addresses are hosts */
    assert_int_equal(m.routes[0].port, 1);
    assert_string_equal(m.routes[0].port_name, "wan");
    assert_true(m.routes[1].direct);
    assert_int_equal(m.routes[1].port, 0);
    assert_int_equal(m.routes[2].port, 2);
    assert_int_equal(m.routes[2].prefix.addr, 0xcb007180);

    assert_int_equal(m.nneighs, 2);
    assert_int_equal(m.neighs[0].port, 0);
    assert_string_equal(m.neighs[0].port_name, "lan");
    assert_int_equal(m.neighs[1].port, 2);
    assert_memory_equal(m.neighs[1].mac, ((uint8_t[]){2, 0, 0, 0, 0, 9}), 6);

    assert_int_equal(m.nshapers, 2);
    const struct sup_shaper *sw = &m.shapers[0], *su = &m.shapers[1];
    assert_int_equal(sw->port, 1);
    assert_int_equal(wan->shaper, 0);
    assert_int_equal(up->shaper, 1);
    assert_int_equal(lan->shaper, -1);
    assert_int_equal(sw->rate, 100000000); /* 12.5 megabytes/s */
    assert_int_equal(sw->overhead, 38);
    assert_int_equal(sw->burst, 125000); /* default: 10 ms at rate */
    assert_int_equal(sw->nclasses, 2);
    assert_int_equal(sw->default_class, 1);
    assert_int_equal(su->rate, 1000000000);
    assert_int_equal(su->burst, 1536);
    assert_int_equal(su->overhead, 24);
    assert_int_equal(su->nclasses, 0);
    assert_int_equal(su->default_class, -1);

    assert_int_equal(m.nclasses, 2);
    const struct sup_class *voice = &m.classes[0], *bulk = &m.classes[1];
    assert_string_equal(voice->name, "voice");
    assert_int_equal(voice->port, 1);
    assert_int_equal(voice->rate, 10000000);
    assert_int_equal(voice->ceil, 20000000);
    assert_int_equal(voice->prio, 0);
    assert_false(voice->is_default);
    assert_int_equal(voice->match.fields, SHP_MATCH_DSCP | SHP_MATCH_PROTO | SHP_MATCH_DPORT | SHP_MATCH_SRC);
    assert_int_equal(voice->match.dscp, 46);
    assert_int_equal(voice->match.proto, 17);
    assert_int_equal(voice->match.dport_lo, 5000);
    assert_int_equal(voice->match.dport_hi, 5010);
    assert_int_equal(voice->match.src.addr, 0x0a010000);
    assert_int_equal(voice->match.src.len, 24);
    assert_int_equal(bulk->rate, 1500000);
    assert_int_equal(bulk->ceil, 100000000); /* default: the port's rate */
    assert_int_equal(bulk->prio, 4);
    assert_true(bulk->is_default);

    /* router, driver-lan (queues 0 and 1), driver-wan, driver-up-1, shaper-wan, shaper-up-1 */
    assert_int_equal(m.nservices, 7);
    const char *names[] = {"router",      "driver-lan", "driver-lan.1", "driver-wan",
                           "driver-up-1", "shaper-wan", "shaper-up-1"};
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(m.services[i].name, names[i]);
    /* driver-lan.1 is [service driver-lan] on queue 1 */
    assert_int_equal(m.services[2].restart, SUP_RESTART_NEVER);
    assert_int_equal(m.services[2].port, 0);
    assert_int_equal(m.services[2].queue, 1);
    assert_int_equal(m.services[1].queue, 0);
    const struct sup_service *r = &m.services[0];
    assert_int_equal(r->restart, SUP_RESTART_ON_FAILURE);
    assert_int_equal(r->hang_ms, 500);
    assert_int_equal(r->restart_limit, 3);
    assert_int_equal(r->restart_window_ms, 2000);
    assert_int_equal(r->cpu, 1);
    assert_int_equal(r->poll_us, 50);
    assert_int_equal(r->sched, SUP_SCHED_BATCH);
    assert_int_equal(r->cpu_max_pct, 150);
    assert_int_equal(m.services[1].cpu_max_pct, 0);
    assert_int_equal(m.router.restart_cpu_max_pct, 25);
    assert_int_equal(r->port, -1);
    assert_int_equal(m.services[1].sched, SUP_SCHED_NORMAL);
    assert_int_equal(m.services[1].restart, SUP_RESTART_NEVER);
    assert_int_equal(m.services[1].port, 0);
    assert_int_equal(m.services[1].kind, SUP_SVC_DRIVER);
    assert_int_equal(m.services[3].restart, SUP_RESTART_ALWAYS);
    assert_int_equal(m.services[5].kind, SUP_SVC_SHAPER);
    assert_int_equal(m.services[5].port, 1);
    assert_int_equal(m.services[5].restart_window_ms, 500);
    assert_int_equal(m.services[5].hang_ms, 200);
    assert_int_equal(m.services[6].port, 2);
    for (size_t i = 0; i < 7; i++)
        assert_int_equal(m.services[i].uid, 0);
    sup_manifest_free(&m);
}

/* [router] uids: service i of the service table runs as FIRST + i (and
 * gid FIRST + i); a range that holds every service exactly is enough. Each
 * queue of an AF_XDP port and each shaper is a service of its own. */
static void test_manifest_uids(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint32_t first, last;
        unsigned line;
        size_t nservices;
        const char *names[6];
    } cases[] = {
        {BASE "[router]\nuids = 5000-5002\n", 5000, 5002, 10, 3, {"router", "driver-a", "driver-b"}},
        {SHAPER_B "[router]\nname = x\nuids = 70000-80000 ; in the middle\n", 70000, 80000, 13, 4,
         {"router", "driver-a", "driver-b", "shaper-b"}},
        {BASE "[port x]\ndriver = afxdp\nifname = xx\naddress = 10.3.0.1/24\nqueues = 2\n"
              "[router]\nuids = 2147483642-2147483647\n",
         2147483642u, 2147483647u, 15, 5, {"router", "driver-a", "driver-b", "driver-x", "driver-x.1"}},
        {BASE "[router]\nuser =\ngroup =\nuids = 1-3\n", 1, 3, 12, 3, {"router", "driver-a", "driver-b"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", cases[i].text, &m, &err);
        if (rc)
            print_error("case %zu: %s\n", i, err.msg);
        assert_int_equal(rc, 0);
        assert_string_equal(m.router.user, "");
        assert_string_equal(m.router.group, "");
        assert_int_equal(m.router.uids.first, cases[i].first);
        assert_int_equal(m.router.uids.last, cases[i].last);
        assert_int_equal(m.router.src.key_line[SUP_ROUTER_UIDS], cases[i].line);
        assert_int_equal(m.nservices, cases[i].nservices);
        for (size_t j = 0; j < m.nservices; j++) {
            assert_string_equal(m.services[j].name, cases[i].names[j]);
            assert_int_equal(m.services[j].uid, cases[i].first + j);
        }
        sup_manifest_free(&m);
    }
}

/* [router] stages: off unless the manifest says on. */
static void test_manifest_stages(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool on;
        unsigned line;
    } cases[] = {
        {BASE "[router]\nstages = on\n", true, 10},
        {BASE "[router]\nname = x\nstages = off ; the default\n", false, 11},
        {BASE "[router]\nname = x\n", false, 0},
        {BASE, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct sup_manifest m;
        struct sup_manifest_err err;
        int rc = sup_manifest_load_string("t.ini", cases[i].text, &m, &err);
        if (rc)
            print_error("case %zu: %s\n", i, err.msg);
        assert_int_equal(rc, 0);
        assert_int_equal(m.router.stages, cases[i].on);
        assert_int_equal(m.router.src.key_line[SUP_ROUTER_STAGES], cases[i].line);
        sup_manifest_free(&m);
    }
}

static void test_manifest_rate_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(sup_rate_format(100000000, buf, sizeof buf), "100mbit");
    assert_string_equal(sup_rate_format(1500000, buf, sizeof buf), "1.5mbit");
    assert_string_equal(sup_rate_format(49800000, buf, sizeof buf), "49.8mbit");
    assert_string_equal(sup_rate_format(12, buf, sizeof buf), "12bit");
    assert_string_equal(sup_rate_format(999, buf, sizeof buf), "999bit");
    assert_string_equal(sup_rate_format(1001, buf, sizeof buf), "1.001kbit");
    assert_string_equal(sup_rate_format(2000000000000, buf, sizeof buf), "2tbit");
    /* 12 decimals of tbit is past the parser's 9: one unit down. */
    assert_string_equal(sup_rate_format(1000000000001, buf, sizeof buf), "1000.000000001gbit");
    /* What is printed reads back, through the one parser, as the same rate. */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t bits = 1000 + x % (1000000000000ull - 1000 + 1);
        if (i % 3 == 0)
            bits = bits / 1000000 * 1000000 + (x >> 40) % 1000; /* round figures with a tail */
        if (bits < 1000)
            bits = 1000;
        uint64_t back = 0;
        char why[256];
        sup_rate_format(bits, buf, sizeof buf);
        if (sup_parse_rate(buf, &back, why, sizeof why) || back != bits)
            fail_msg("%llu printed as %s reads back as %llu (%s)", (unsigned long long)bits, buf,
                     (unsigned long long)back, why);
    }
    /* The byte forms are tc's: 50mbps is 400mbit. */
    uint64_t r;
    char why[256];
    assert_null(sup_parse_rate("50mbps", &r, why, sizeof why));
    assert_int_equal(r, 400000000);
    assert_null(sup_parse_rate("2.5mbps", &r, why, sizeof why));
    assert_int_equal(r, 20000000);
    assert_non_null(sup_parse_rate("50", &r, why, sizeof why));
}

/* Files: the path as given names the file in every message. */
static void test_manifest_files(void **state)
{
    (void)state;
    struct sup_manifest m;
    struct sup_manifest_err err;
    int rc = sup_manifest_load_file("tests/manifests/good.ini", &m, &err);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(m.nports, 2);
    assert_string_equal(m.router.name, "edge1");
    assert_int_equal(m.nroutes, 1);
    assert_int_equal(m.nshapers, 1);
    assert_int_equal(m.shapers[0].rate, 100000000);
    assert_int_equal(m.shapers[0].burst, 65536);
    sup_manifest_free(&m);

    assert_int_equal(sup_manifest_load_file("tests/manifests/bad-prefix.ini", &m, &err), -EINVAL);
    assert_string_equal(err.msg,
                        "tests/manifests/bad-prefix.ini:14: [port wan] address: \"10.2.0.1/33\" is not an IPv4 prefix");
    assert_int_equal(err.line, 14);

    assert_int_equal(sup_manifest_load_file("tests/manifests/bad-route.ini", &m, &err), -EINVAL);
    assert_string_equal(err.msg,
                        "tests/manifests/bad-route.ini:18: [route 0.0.0.0/0] via: 10.3.0.1 is not on any port's network");

    assert_int_equal(sup_manifest_load_file("tests/manifests/no-such-file.ini", &m, &err), -ENOENT);
    assert_string_equal(err.msg, "tests/manifests/no-such-file.ini: cannot read: No such file or directory");
    assert_int_equal(sup_manifest_load_file("tests/manifests", &m, &err), -EISDIR);
    assert_string_equal(err.msg, "tests/manifests: cannot read: Is a directory");
    assert_null(m.ports);

    /* A FIFO is refused at once: opening it to read would wait for a writer
     * (a hang, were the open blocking), and so is a device. */
    char dir[] = "/tmp/t_manifest.XXXXXX", fifo[64];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char want[128];
    snprintf(want, sizeof want, "%s: not a regular file", fifo);
    assert_int_equal(sup_manifest_load_file(fifo, &m, &err), -EINVAL);
    assert_string_equal(err.msg, want);
    unlink(fifo);
    rmdir(dir);
    assert_int_equal(sup_manifest_load_file("/dev/null", &m, &err), -EINVAL);
    assert_string_equal(err.msg, "/dev/null: not a regular file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_bad),
        cmocka_unit_test(test_manifest_err_line),
        cmocka_unit_test(test_manifest_ipv6),
        cmocka_unit_test(test_manifest_default),
        cmocka_unit_test(test_manifest_large_frames),
        cmocka_unit_test(test_manifest_full),
        cmocka_unit_test(test_manifest_uids),
        cmocka_unit_test(test_manifest_stages),
        cmocka_unit_test(test_manifest_rate_format),
        cmocka_unit_test(test_manifest_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
