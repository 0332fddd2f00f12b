/* SPDX-License-Identifier: MIT */
/*
 * tables/config.h: the typed part of each service's config blob. The blob
 * (ipc/svc.h) holds what every service needs: its name, owner id, pool,
 * stats, rings, eventfds and the ports. What only one kind of service needs
 * follows it in extra[], as one of the structs below, which opens with a
 * header naming its kind, its version and its size: a service started with
 * a blob of another kind or another version says so and exits, instead of
 * reading fields that are not there.
 *
 * The supervisor fills these in supervisor/setup.c; each service takes its
 * own with tbl_cfg_get() right after ipc_svc_open().
 */
#ifndef TABLES_CONFIG_H
#define TABLES_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/svc.h"
#include "tables/shaper.h"

#define TBL_CFG_MAGIC 0x47464352u /* "RCFG" */

struct tbl_cfg_hdr {
    uint32_t magic;   /* TBL_CFG_MAGIC */
    uint32_t kind;    /* enum ipc_svc_kind: the same as the blob's */
    uint32_t version; /* that kind's TBL_*_CFG_VERSION */
    uint32_t size;    /* sizeof the whole typed struct */
};

/* 3: the IPv6 FIB and neighbour table, and each port's IPv6 addresses.
 * 4: each port's Router Advertisement period.
 * 5: the ports' host-side interfaces in the control namespace (cp_pair).
 * 6: the neighbour timers (neigh_*). */
#define TBL_ROUTER_CFG_VERSION 6u
#define TBL_CP_NONE 0xffu

/* IPv6 addresses per port, the link-local one included. */
#define TBL_ADDR6_MAX 8u

struct tbl_addr6 {
    uint8_t addr[16]; /* network byte order */
    uint8_t plen;     /* the on-link prefix's length (the connected route) */
    uint8_t pad[3];
};

struct tbl_port6 {
    uint32_t n; /* addresses in a[]; 0: IPv6 is off on the port */
    struct tbl_addr6 a[TBL_ADDR6_MAX];
    uint32_t ra_interval_s; /* unsolicited Router Advertisements about this often; 0: none (ra = no) */
};

struct tbl_router_cfg {
    struct tbl_cfg_hdr hdr;
    int32_t fib_fd;         /* the FIB's tables, sealed: mapped read-only */
    int32_t fib_readers_fd; /* the FIB's reader slots (the IPv6 FIB's too: one region) */
    int32_t neigh_fd;       /* the neighbour table */
    uint32_t pad;
    uint32_t icmp_rate;  /* ICMP errors per second (0: no limit) */
    uint32_t icmp_burst; /* token bucket depth */
    int32_t fib6_fd;     /* the IPv6 FIB's tables, sealed; -1: no IPv6 */
    int32_t neigh6_fd;   /* the IPv6 neighbour table */
    struct tbl_port6 port6[IPC_MAX_PORTS];
    /* The control namespace (docs/routing.md, "Control traffic"): a port's
     * host-side interface is a router port of its own, after the
     * manifest's. cp_pair[p] is the other of the two (TBL_CP_NONE: p has
     * none), cp_host[p] is 1 for the host side. */
    uint8_t cp_pair[IPC_MAX_PORTS];
    uint8_t cp_host[IPC_MAX_PORTS];
    /* The neighbour timers, ARP's and ND's (services/router/rt.h, rt_cfg). */
    uint32_t neigh_reachable_ms;
    uint32_t neigh_retrans_ms;
    uint32_t neigh_probes;
    uint32_t neigh_delay_ms;
    uint32_t neigh_stale_ms;
};

#define TBL_DRIVER_CFG_VERSION 3u /* 2: VLAN sub-interfaces (vlan[]); 3: driver groups (group[]) */

/* A driver group's ports (docs/drivers.md, "Driver groups"): at most the
 * supervisor's SUP_GROUP_MAX, one device fd each. */
#define TBL_GROUP_MAX 5

struct tbl_group_port {
    uint16_t port;         /* the port's index */
    uint16_t kernel_owner; /* AF_XDP: the owner id of buffers lent to its socket */
    int32_t dev_fd;        /* its device */
};

/* VLAN sub-interfaces a driver serves besides its own port
 * (drivers/common/vlan.h): at most one per other router port. */
#define TBL_VLAN_MAX (IPC_MAX_PORTS - 1)

struct tbl_vlan {
    uint16_t port;     /* the VLAN port's index */
    uint16_t ntags;    /* 1: 802.1Q; 2: 802.1ad outer tag, then 802.1Q */
    uint16_t tpid[2];  /* outer first: 0x8100, or 0x88a8 then 0x8100 */
    uint16_t vid[2];   /* 1..4094 each */
};

/* TAP and AF_XDP drivers. */
struct tbl_driver_cfg {
    struct tbl_cfg_hdr hdr;
    int32_t dev_fd;        /* the TAP or XSK fd the supervisor keeps */
    uint16_t queue;        /* the port's queue this instance serves */
    uint16_t kernel_owner; /* AF_XDP: the owner id of buffers lent to its socket (IPC_OWNER_KERNEL | n) */
    uint16_t nvlan;        /* entries in vlan[]; 0: every frame is the port's, tagged or not */
    uint16_t untagged;     /* with VLANs: 1 untagged frames go to the port itself, 0 dropped */
    struct tbl_vlan vlan[TBL_VLAN_MAX];
    /* A driver group: every port it serves, group[0] the config's port
     * (dev_fd and kernel_owner above repeat its); 0: the one port. */
    uint16_t ngroup;
    uint16_t pad;
    struct tbl_group_port group[TBL_GROUP_MAX];
};

#define TBL_SHAPER_CFG_VERSION 3u /* 2: IPv6 prefixes in a class's match; 3: the filter's mark */

struct tbl_shaper_cfg {
    struct tbl_cfg_hdr hdr;
    int32_t mbox_fd; /* the control mailbox (tables/shaper.h) */
    uint32_t pad;
    struct shp_cfg shp;
};

/** Supervisor: fill @h for a struct of @size bytes of service kind @kind. */
void tbl_cfg_hdr_init(struct tbl_cfg_hdr *h, uint32_t kind, uint32_t version, size_t size);

/**
 * Service: the typed struct in @svc's blob, checked against the blob's kind,
 * @version and @size. Returns it, or NULL with @err saying what differs.
 */
const void *tbl_cfg_get(const struct ipc_svc *svc, uint32_t version, size_t size, struct ipc_err *err);

#endif
