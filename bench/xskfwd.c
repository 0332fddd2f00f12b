/* SPDX-License-Identifier: MIT */
/*
 * bench/xskfwd.c: bench/forward's "onexsk" mode: a one-process AF_XDP
 * forwarder, the floor under ringrouter's AF_XDP path. It pays what the
 * kernel charges for moving frames through AF_XDP sockets on these devices
 * (on veth, copy mode: the copy into the UMEM on receive, an skb per frame
 * on transmit) and the least user-space work, in one process: no rings
 * between processes, no pool, no wake-ups but the kernel's. ringrouter's
 * CPU per packet over this one's is the price of its design; this one's
 * over Linux forwarding is the price of AF_XDP on the devices, which no
 * design above the sockets can take back.
 *
 *   xskfwd DEV_A PEER_MAC_A DEV_B PEER_MAC_B
 *
 * Binds one socket to queue 0 of each device (native XDP, copy mode, as
 * ringrouter's `xdp_mode = auto` picks on veth; libxdp's default program
 * redirects every frame of the queue to it), both on one UMEM, prints
 * "ready" and forwards until SIGTERM: an IPv4 frame received on A leaves on
 * B from the same UMEM frame, its TTL decremented and its MACs set (source:
 * B's own; destination: PEER_MAC_B), and the other way round. Anything else
 * is dropped (the hosts have static neighbour entries for our MACs).
 *
 * One thread. Each loop: per device, up to FWD_BATCH frames from its RX
 * ring into the other's TX ring (no more than that has room for: the rest
 * waits in the RX ring, and the kernel drops at an empty fill ring, before
 * its copy, as ringrouter's driver arranges), a kick while the TX ring holds
 * unsent frames, completions back to the free list, the fill rings topped
 * up; and when nothing moved, one poll() over both sockets. No busy
 * polling: the devices' NAPI threads receive, placed and coalesced as
 * bench/forward places ringrouter's.
 *
 *   xskfwd -s XSKFWD_BPF_O DEV_A PEER_MAC_A DEV_B PEER_MAC_B
 *
 * The floor for TCP from a sender that keeps TSO and checksum offload
 * (bench/forward FWD_GEN_TSO=1), what ringrouter does with `xdp_mode = skb`:
 * generic XDP (native XDP on a veth takes TSO off the sender, and a frame
 * with a partial checksum would leave with it), the frags-capable program of
 * bench/xskfwd.bpf.c, sockets bound with XDP_USE_SG: a 64 KB TSO frame comes
 * as up to 37 descriptors, XDP_PKT_CONTD on all but the last. It leaves cut
 * into MTU-sized segments with complete checksums (bench/fwd_gso.h), each
 * copied into a free UMEM frame and sent as one descriptor; the received
 * frames go back to the free list. Sending stays single-buffer: veth drops
 * a multi-buffer frame larger than its MTU, and in copy mode each further
 * buffer of one costs the kernel a page and a copy of its own. A frame that
 * fits the MTU leaves as in native mode, a partial checksum completed.
 */
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_xdp.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "fwd_frame.h"
#include "fwd_gso.h"

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4) /* linux/if_xdp.h, 6.6+ */
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9 /* linux/if_xdp.h, 6.17+ */
#endif

/* ringrouter's geometry (tables/xsk.h, the default pool), so that the two
 * differ in what runs above the sockets only. */
#define FRAME_SIZE 2048u
#define N_FRAMES 16384u
#define RX_SIZE 8192u
#define TX_SIZE 2048u
#define FILL_SIZE 8192u
#define COMP_SIZE 2048u
#define FILL_STOCK 4096u /* per socket: a quarter of the frames, as ringrouter's fill stock with two ports */
#define TX_BUDGET 256u
#define FWD_BATCH 256u
#define KICKS_MAX 8
#define PIECES_MAX 64u /* descriptors of one multi-buffer frame: 64 KB in 1,792-byte pieces is 37 */

struct port {
    const char *dev;
    uint8_t mac[6];      /* the device's own: the source of what leaves by it */
    uint8_t peer_mac[6]; /* the host behind it: the destination */
    struct xsk_socket *xsk;
    struct xsk_ring_cons rx, comp;
    struct xsk_ring_prod tx, fill;
    uint32_t fill_stock; /* frames lent through the fill ring and not yet received */
    unsigned int ifindex; /* -s: where our program is attached */
    uint32_t mtu;         /* -s: the device's, the size segments are cut to */
};

/* -s: the frags-capable program's object (bench/xskfwd.bpf.c); NULL: native
 * XDP with libxdp's default program, single-buffer. */
static const char *sg_obj;

static volatile sig_atomic_t stop;
static uint8_t *area;
static uint64_t free_frames[N_FRAMES];
static uint32_t n_free;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static void die(const char *what, const char *arg, int err)
{
    fprintf(stderr, "xskfwd: %s %s: %s\n", what, arg, strerror(err));
    exit(1);
}

static void dev_mac(const char *dev, uint8_t mac[6])
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    if (strlen(dev) >= IFNAMSIZ)
        die("device name", dev, ENAMETOOLONG);
    memcpy(ifr.ifr_name, dev, strlen(dev) + 1);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
        die("SIOCGIFHWADDR", dev, errno);
    close(fd);
    memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
}

/* The socket of @p on @umem (the first one creates it with the UMEM's own
 * fill and completion rings, the second shares it with rings of its own). */
static void port_open(struct port *p, struct xsk_umem **umem, int first)
{
    struct xsk_socket_config cfg = {
        .rx_size = RX_SIZE,
        .tx_size = TX_SIZE,
        .xdp_flags = XDP_FLAGS_DRV_MODE,
        .bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
    };
    if (sg_obj) {
        cfg.xdp_flags = XDP_FLAGS_SKB_MODE;
        cfg.bind_flags |= XDP_USE_SG;
        cfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD; /* ours, sg_attach */
    }
    int err;
    if (first) {
        const struct xsk_umem_config ucfg = {.fill_size = FILL_SIZE, .comp_size = COMP_SIZE, .frame_size = FRAME_SIZE};
        err = xsk_umem__create(umem, area, (uint64_t)N_FRAMES * FRAME_SIZE, &p->fill, &p->comp, &ucfg);
        if (err)
            die("UMEM for", p->dev, -err);
        err = xsk_socket__create(&p->xsk, p->dev, 0, *umem, &p->rx, &p->tx, &cfg);
    } else {
        err = xsk_socket__create_shared(&p->xsk, p->dev, 0, *umem, &p->rx, &p->tx, &p->fill, &p->comp, &cfg);
    }
    if (err)
        die("AF_XDP socket on", p->dev, -err);
    int fd = xsk_socket__fd(p->xsk);
    /* As supervisor/xsk.c: up to TX_BUDGET frames per kick where the kernel
     * allows it (6.17+), and send buffer for the whole TX ring, so that a
     * kick does not stop at the default wmem while the peer frees skbs. */
    unsigned int budget = TX_BUDGET;
    if (setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget, sizeof budget) < 0 && errno != ENOPROTOOPT &&
        errno != EINVAL)
        die("XDP_MAX_TX_SKB_BUDGET on", p->dev, errno);
    int sndbuf = (int)(TX_SIZE * (FRAME_SIZE + 1024u));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) < 0)
        die("SO_SNDBUFFORCE on", p->dev, errno);
}

/* -s: our program on @p's device in generic mode, its XSKMAP naming @p's
 * socket, and the device's MTU. */
static void sg_attach(struct port *p)
{
    struct bpf_object *obj = bpf_object__open_file(sg_obj, NULL);
    if (!obj || bpf_object__load(obj))
        die("loading", sg_obj, errno ? errno : EINVAL);
    struct bpf_program *prog = bpf_object__find_program_by_name(obj, "xskfwd_sg");
    int map = bpf_object__find_map_fd_by_name(obj, "xsks");
    if (!prog || map < 0)
        die("xskfwd_sg and its XSKMAP in", sg_obj, ENOENT);
    int err = xsk_socket__update_xskmap(p->xsk, map);
    if (err)
        die("XSKMAP for", p->dev, -err);
    p->ifindex = if_nametoindex(p->dev);
    if (!p->ifindex)
        die("device", p->dev, errno);
    err = bpf_xdp_attach((int)p->ifindex, bpf_program__fd(prog), XDP_FLAGS_SKB_MODE, NULL);
    if (err)
        die("generic XDP on", p->dev, -err);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, p->dev, strlen(p->dev) + 1); /* checked by dev_mac */
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ioctl(fd, SIOCGIFMTU, &ifr) < 0)
        die("SIOCGIFMTU", p->dev, errno);
    close(fd);
    p->mtu = (uint32_t)ifr.ifr_mtu;
}

/* Lend free frames through @p's fill ring, up to its stock. */
static void fill(struct port *p)
{
    uint32_t want = FILL_STOCK - p->fill_stock, idx;
    if (want > n_free)
        want = n_free;
    if (want < 64 && p->fill_stock > FILL_STOCK / 2)
        return;
    uint32_t n = xsk_ring_prod__reserve(&p->fill, want, &idx);
    for (uint32_t i = 0; i < n; i++)
        *xsk_ring_prod__fill_addr(&p->fill, idx + i) = free_frames[--n_free];
    xsk_ring_prod__submit(&p->fill, n);
    p->fill_stock += n;
}

/* Frames @p's kernel has sent: back to the free list. */
static void complete(struct port *p)
{
    uint32_t idx, n = xsk_ring_cons__peek(&p->comp, COMP_SIZE, &idx);
    for (uint32_t i = 0; i < n; i++)
        free_frames[n_free++] = *xsk_ring_cons__comp_addr(&p->comp, idx + i) & ~(uint64_t)(FRAME_SIZE - 1);
    xsk_ring_cons__release(&p->comp, n);
}

/* Up to FWD_BATCH frames from @in's RX ring to @out's TX ring. */
static uint32_t forward(struct port *in, struct port *out)
{
    uint32_t ri, ti, room = xsk_prod_nb_free(&out->tx, FWD_BATCH);
    uint32_t n = xsk_ring_cons__peek(&in->rx, room < FWD_BATCH ? room : FWD_BATCH, &ri);
    if (!n)
        return 0;
    in->fill_stock -= n;
    if (xsk_ring_prod__reserve(&out->tx, n, &ti) != n)
        die("TX ring of", out->dev, ENOSPC); /* room was counted above */
    uint32_t sent = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&in->rx, ri + i);
        uint8_t *eth = xsk_umem__get_data(area, d->addr);
        if (fwd_ipv4_hop(eth, d->len, out->peer_mac, out->mac) < 0) {
            free_frames[n_free++] = d->addr & ~(uint64_t)(FRAME_SIZE - 1);
            continue;
        }
        struct xdp_desc *t = xsk_ring_prod__tx_desc(&out->tx, ti + sent++);
        t->addr = d->addr;
        t->len = d->len;
    }
    xsk_ring_cons__release(&in->rx, n);
    /* The reserved slots past @sent are handed back: libxdp's producer
     * cache moves on with submit only. */
    out->tx.cached_prod -= n - sent;
    xsk_ring_prod__submit(&out->tx, sent);
    return n;
}

/* The frames of descriptors [s, e) of @in's peek at @ri back to the free list. */
static void sg_free(struct port *in, uint32_t ri, uint32_t s, uint32_t e)
{
    for (uint32_t i = s; i < e; i++)
        free_frames[n_free++] = xsk_ring_cons__rx_desc(&in->rx, ri + i)->addr & ~(uint64_t)(FRAME_SIZE - 1);
}

/*
 * -s: forward() for multi-buffer frames. Whole frames only (the kernel
 * publishes a frame's descriptors together; a peek that ends inside one
 * leaves it for the next), each as long as the TX ring has room for all it
 * becomes and the free list frames for its segments: the rest waits in the
 * RX ring. Returns the descriptors consumed.
 */
static uint32_t forward_sg(struct port *in, struct port *out)
{
    uint32_t ri, n = xsk_ring_cons__peek(&in->rx, FWD_BATCH, &ri);
    if (!n)
        return 0;
    uint32_t room = xsk_prod_nb_free(&out->tx, TX_SIZE), ti, sent = 0, used = 0;
    if (xsk_ring_prod__reserve(&out->tx, room, &ti) != room)
        die("TX ring of", out->dev, ENOSPC); /* room was counted above */
    uint32_t mtu = in->mtu < out->mtu ? in->mtu : out->mtu;
    while (used < n) {
        uint32_t e = used;
        while (e < n && (xsk_ring_cons__rx_desc(&in->rx, ri + e)->options & XDP_PKT_CONTD))
            e++;
        if (e++ == n)
            break; /* its end is past this peek */
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&in->rx, ri + used);
        uint8_t *eth = xsk_umem__get_data(area, d->addr);
        if (e - used == 1 && d->len <= FWD_ETH_HLEN + mtu) {
            if (sent == room)
                break;
            if (fwd_ipv4_hop(eth, d->len, out->peer_mac, out->mac) < 0) {
                sg_free(in, ri, used, e);
            } else {
                fwd_csum_fix(eth, d->len);
                struct xdp_desc *t = xsk_ring_prod__tx_desc(&out->tx, ti + sent++);
                t->addr = d->addr;
                t->len = d->len;
            }
            used = e;
            continue;
        }
        uint8_t *piece[PIECES_MAX], hdr[FWD_HDR_MAX];
        uint32_t plen[PIECES_MAX], k = e - used, hlen = 0, mss = 0, nseg = 0, payload = 0;
        if (k <= PIECES_MAX) {
            for (uint32_t i = 0; i < k; i++) {
                const struct xdp_desc *pd = xsk_ring_cons__rx_desc(&in->rx, ri + used + i);
                piece[i] = xsk_umem__get_data(area, pd->addr);
                plen[i] = pd->len;
                payload += pd->len;
            }
            nseg = fwd_gso_plan(piece, plen, k, mtu, &hlen, &mss);
        }
        if (nseg) {
            if (nseg > room - sent || nseg > n_free)
                break; /* wait for completions */
            memcpy(hdr, piece[0], hlen);
            if (fwd_ipv4_hop(hdr, hlen, out->peer_mac, out->mac) < 0)
                nseg = 0;
        }
        struct fwd_cursor c = {.p = piece, .len = plen, .n = k, .off = hlen};
        for (uint32_t s = 0; s < nseg; s++) {
            uint64_t f = free_frames[--n_free];
            struct xdp_desc *t = xsk_ring_prod__tx_desc(&out->tx, ti + sent++);
            t->addr = f;
            t->len = fwd_gso_seg(xsk_umem__get_data(area, f), hdr, hlen, mss, s, nseg, payload - hlen, &c);
        }
        sg_free(in, ri, used, e);
        used = e;
    }
    xsk_ring_cons__release(&in->rx, used);
    in->fill_stock -= used;
    out->tx.cached_prod -= room - sent;
    xsk_ring_prod__submit(&out->tx, sent);
    return used;
}

/* Whether @p's TX ring holds frames the kernel has not taken. */
static int tx_unsent(struct port *p)
{
    return xsk_prod_nb_free(&p->tx, TX_SIZE) < TX_SIZE;
}

/* Copy mode sends only on a kick, at most TX_BUDGET frames each: kick until
 * the ring is empty, no progress, or KICKS_MAX kicks. */
static void kick(struct port *p)
{
    for (int k = 0; k < KICKS_MAX && tx_unsent(p) && xsk_ring_prod__needs_wakeup(&p->tx); k++) {
        uint32_t before = xsk_prod_nb_free(&p->tx, TX_SIZE);
        if (sendto(xsk_socket__fd(p->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 && errno != EAGAIN && errno != EBUSY &&
            errno != ENOBUFS)
            die("sendto on", p->dev, errno);
        if (xsk_prod_nb_free(&p->tx, TX_SIZE) == before)
            break;
    }
}

/* The arguments into @port, and the UMEM's memory (@share: MAP_SHARED, for
 * bench/xsksplit.c's two processes) with every frame free. Exits on bad
 * arguments. */
static void args_and_umem(int argc, char **argv, const char *prog, struct port port[2], int share)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s DEV_A PEER_MAC_A DEV_B PEER_MAC_B\n", prog);
        exit(2);
    }
    port[0].dev = argv[1];
    port[1].dev = argv[3];
    fwd_parse_mac(prog, argv[2], port[0].peer_mac);
    fwd_parse_mac(prog, argv[4], port[1].peer_mac);
    for (int i = 0; i < 2; i++)
        dev_mac(port[i].dev, port[i].mac);
    area = mmap(NULL, (size_t)N_FRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE,
                (share ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        die("mmap", "UMEM", errno);
    for (uint32_t i = 0; i < N_FRAMES; i++)
        free_frames[n_free++] = (uint64_t)(N_FRAMES - 1 - i) * FRAME_SIZE;
}

/* bench/xsksplit.c includes this file for its sockets and their rings, and
 * brings its own main. */
#ifndef XSKFWD_NO_MAIN
int main(int argc, char **argv)
{
    struct port port[2] = {{0}};
    if (argc > 2 && strcmp(argv[1], "-s") == 0) {
        sg_obj = argv[2];
        argv += 2;
        argc -= 2;
    } else if (argc != 5) {
        fprintf(stderr, "usage: xskfwd [-s XSKFWD_BPF_O] DEV_A PEER_MAC_A DEV_B PEER_MAC_B\n");
        return 2;
    }
    args_and_umem(argc, argv, "xskfwd", port, 0);
    struct xsk_umem *umem = NULL;
    port_open(&port[0], &umem, 1);
    port_open(&port[1], &umem, 0);
    for (int i = 0; i < 2 && sg_obj; i++)
        sg_attach(&port[i]);
    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    for (int i = 0; i < 2; i++)
        fill(&port[i]);
    printf("ready\n");
    fflush(stdout);
    struct pollfd pfd[2] = {{.fd = xsk_socket__fd(port[0].xsk), .events = POLLIN},
                            {.fd = xsk_socket__fd(port[1].xsk), .events = POLLIN}};
    while (!stop) {
        uint32_t moved = sg_obj ? forward_sg(&port[0], &port[1]) + forward_sg(&port[1], &port[0])
                                : forward(&port[0], &port[1]) + forward(&port[1], &port[0]);
        for (int i = 0; i < 2; i++) {
            kick(&port[i]);
            complete(&port[i]);
        }
        for (int i = 0; i < 2; i++)
            fill(&port[i]);
        if (moved)
            continue;
        /* Unsent frames the kicks left (no progress: the ring or the skb
         * budget full): come back within 1 ms rather than spin. */
        int busy = tx_unsent(&port[0]) || tx_unsent(&port[1]);
        if (poll(pfd, 2, busy ? 1 : 100) < 0 && errno != EINTR)
            die("poll", "", errno);
    }
    for (int i = 0; i < 2; i++) {
        if (sg_obj)
            bpf_xdp_detach((int)port[i].ifindex, XDP_FLAGS_SKB_MODE, NULL);
        xsk_socket__delete(port[i].xsk);
    }
    xsk_umem__delete(umem);
    return 0;
}
#endif
