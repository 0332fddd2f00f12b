/* SPDX-License-Identifier: MIT */
/*
 * supervisor/metrics_render.c: the metric families and where each sample
 * comes from in the supervisor's answers (the rules: metrics.c's header;
 * the list: docs/observability.md). Everything is read from the JSON as
 * the supervisor wrote it; a field that is missing gives no sample.
 */
#include "supervisor/metrics.h"

#include <stdio.h>
#include <string.h>

#define D(var, name, type, help) static const struct mx_desc var = {name, type, help}

D(SUP_UP, "ringrouter_supervisor_up", "gauge", "1 if the supervisor answered this scrape's status request, else 0");
D(SUP_INFO, "ringrouter_supervisor_info", "gauge", "The supervisor's version (always 1)");
D(SUP_PID, "ringrouter_supervisor_pid", "gauge", "The supervisor's process id");
D(SUP_CPU, "ringrouter_supervisor_cpu_seconds_total", "counter", "The supervisor's CPU time (/proc: user + system)");
D(SUP_UPTIME, "ringrouter_supervisor_uptime_seconds", "gauge", "Seconds since the running supervisor image started");
D(SUP_START, "ringrouter_supervisor_start_time_seconds", "gauge",
  "When the running supervisor image started, unix seconds");
D(RL_OK, "ringrouter_reload_last_successful", "gauge",
  "1 if the last reload (ringrouter reload, SIGHUP) applied every change, 0 if it was refused or failed in part");
D(RL_RESULT, "ringrouter_reload_last_result", "gauge", "The last reload's result: ok, partial or refused (always 1)");
D(RL_TIME, "ringrouter_reload_last_timestamp_seconds", "gauge", "When the last reload ended, unix seconds");

D(SV_UP, "ringrouter_service_up", "gauge", "1 if the service is up (ready), else 0");
D(SV_STATE, "ringrouter_service_state", "gauge",
  "The service's state: starting, up, backoff, stopping, down or failed (always 1)");
D(SV_INFO, "ringrouter_service_info", "gauge", "The binary and ELF build id the service's instance runs (always 1)");
D(SV_RESTARTS, "ringrouter_service_restarts_total", "counter",
  "Restarts of the service by cause: crash and hang after a death, upgrade and restart asked for");
D(SV_UPTIME, "ringrouter_service_uptime_seconds", "gauge",
  "Seconds since the service's instance was ready (0 unless up)");
D(SV_START, "ringrouter_service_start_time_seconds", "gauge",
  "When the service's running instance started, unix seconds");
D(SV_READY, "ringrouter_service_last_ready_seconds", "gauge",
  "The last (re)start's time from its predecessor's death (or its start) to ready");
D(SV_CPU, "ringrouter_service_cpu_seconds_total", "counter",
  "CPU time of the service's running instance (/proc: user + system)");
D(SV_THR, "ringrouter_service_cpu_throttled_seconds_total", "counter",
  "Time the service's cgroup was throttled by its cpu_max_pct");
D(SV_THRP, "ringrouter_service_cpu_throttled_periods_total", "counter",
  "Periods in which the service's cgroup was throttled by its cpu_max_pct");
D(SV_LOOPS, "ringrouter_service_loops_total", "counter", "Passes through the service's main loop");
D(SV_SLEEPS, "ringrouter_service_sleeps_total", "counter", "Times the service armed its wake words and waited");
D(SV_WAKES, "ringrouter_service_wakeups_sent_total", "counter", "Eventfd writes the service made to wake a peer");
D(SV_MISSED, "ringrouter_service_wakeups_missed_total", "counter",
  "Sleeps that ran to their timeout although an input ring held packets (should stay 0)");
D(SV_HELD, "ringrouter_service_buffers_held", "gauge", "Pool buffers whose owner word names the service");
D(SV_CAPLOST, "ringrouter_capture_lost_total", "counter",
  "Captures the service's capture ring refused because its reader was slow (the packets went on)");
D(SV_TRLOST, "ringrouter_trace_records_lost_total", "counter",
  "Trace records the service's trace ring refused because its reader was slow (the packets went on)");
D(SV_CTR, "ringrouter_service_events_total", "counter",
  "A service's named counter (docs/stats.md), by counter name; dotted names give a port or class label");
D(SV_GAUGE, "ringrouter_service_level", "gauge", "A service's named level (a count now, not since start), by name");
D(DROPS, "ringrouter_drops_total", "counter", "Packets a service dropped, by reason (its drop_* and *_drops counters)");

D(PT_INFO, "ringrouter_port_info", "gauge", "A port's device, namespace, driver, MAC and address (always 1)");
D(PT_UP, "ringrouter_port_up", "gauge", "1 if every service of the port is up, else 0");
D(PT_MTU, "ringrouter_port_mtu_bytes", "gauge", "The port's MTU");
D(PT_QUEUES, "ringrouter_port_queues", "gauge", "The port's queues (driver instances)");
D(PT_RXP, "ringrouter_port_rx_packets_total", "counter", "Packets the port's drivers received from the device");
D(PT_RXB, "ringrouter_port_rx_bytes_total", "counter", "Bytes the port's drivers received from the device");
D(PT_RXD, "ringrouter_port_rx_drops_total", "counter",
  "Packets the port's drivers (and AF_XDP's kernel side) dropped on receive");
D(PT_TXP, "ringrouter_port_tx_packets_total", "counter", "Packets the port's drivers sent to the device");
D(PT_TXB, "ringrouter_port_tx_bytes_total", "counter", "Bytes the port's drivers sent to the device");
D(PT_TXD, "ringrouter_port_tx_drops_total", "counter",
  "Packets for the port dropped on the way out: its drivers' tx drops and full rings towards it");

D(RG_OCC, "ringrouter_ring_occupancy", "gauge", "Handles waiting in the ring now");
D(RG_SIZE, "ringrouter_ring_size", "gauge", "The ring's capacity in handles");
D(RG_INFO, "ringrouter_ring_info", "gauge", "The ring's producer and consumer services (always 1)");
D(RG_ENQ, "ringrouter_ring_handles_total", "counter", "Handles published into the ring");
D(RG_WAKE, "ringrouter_ring_wakeups_total", "counter", "Wake-ups sent to the ring's consumer");
D(RG_SLEEP, "ringrouter_ring_sleeps_total", "counter", "Times the ring's consumer armed its wake word and blocked");
D(RG_DROPS, "ringrouter_ring_drops_total", "counter",
  "Packets the ring lost, by reason: full (the producer could not place them), bad_* (refused handles)");
D(RG_CTR, "ringrouter_ring_events_total", "counter", "A ring's other counters (prod_lie, cons_lie), by name");

D(XDP, "ringrouter_xdp_frames_total", "counter", "Frames an AF_XDP port's steering program saw, by verdict");
D(PL_BUFS, "ringrouter_pool_buffers", "gauge", "Buffers in the pools (every trust zone's)");
D(PL_FSIZE, "ringrouter_pool_frame_size_bytes", "gauge", "The size of a pool buffer");
D(PL_FREE, "ringrouter_pool_free_buffers", "gauge", "Pool buffers free now");
D(PL_KERN, "ringrouter_pool_kernel_buffers", "gauge", "Pool buffers lent to the kernel now (AF_XDP)");
D(PL_ZONES, "ringrouter_pool_zones", "gauge", "Trust zones, a pool each");
D(PL_AF, "ringrouter_pool_alloc_failures_total", "counter", "Allocations that found the pool empty");
D(PL_FB, "ringrouter_pool_bad_frees_total", "counter", "Frees of a buffer the caller did not own, refused");
D(PL_MB, "ringrouter_pool_bad_magazines_total", "counter", "Magazines of free buffers dropped as corrupt");
D(SHM, "ringrouter_shm_corrupt_words_total", "counter",
  "Words the supervisor found corrupt in shared memory and repaired");

D(ST_CYC, "ringrouter_stage_cycles_total", "counter", "CPU cycles (TSC) a service spent in a stage of its loop");
D(ST_PKT, "ringrouter_stage_packets_total", "counter", "Packets (or the stage's own unit) a stage handled");
D(ST_CALL, "ringrouter_stage_calls_total", "counter", "Passes through a stage that handled at least one packet");
D(ST_HZ, "ringrouter_tsc_hertz", "gauge", "The TSC's frequency as the supervisor measured it");

#define L(...) mx_labels(lb, sizeof(lb), __VA_ARGS__, NULL)

/* A number member @key of @o as sample of @d, if there is one. */
static void num(struct mx_out *o, const struct mx_desc *d, const char *labels, const struct mx_jv *obj, const char *key)
{
    const struct mx_jv *v = mx_jget(obj, key);
    if (v && v->t == MX_JNUM)
        mx_put(o, d, labels, v->s);
}

static void scaled(struct mx_out *o, const struct mx_desc *d, const char *labels, const struct mx_jv *obj,
                   const char *key, double divisor)
{
    const struct mx_jv *v = mx_jget(obj, key);
    if (v && v->t == MX_JNUM)
        mx_putf(o, d, labels, v->num / divisor);
}

static const struct mx_jv *arr(const struct mx_jv *doc, const char *key)
{
    const struct mx_jv *a = mx_jget(doc, key);
    return a && a->t == MX_JARR ? a : NULL;
}

static void render_status(struct mx_out *o, const struct mx_jv *st)
{
    char lb[1024];
    const struct mx_jv *sup = mx_jget(st, "supervisor");
    mx_put(o, &SUP_UP, "", st ? "1" : "0");
    if (sup) {
        mx_put(o, &SUP_INFO, L("version", mx_jstr(sup, "version")), "1");
        num(o, &SUP_PID, "", sup, "pid");
        double cpu = mx_proc_cpu((pid_t)mx_jnum(sup, "pid", 0));
        if (cpu >= 0)
            mx_putf(o, &SUP_CPU, "", cpu);
        scaled(o, &SUP_UPTIME, "", sup, "uptime_ms", 1000);
        num(o, &SUP_START, "", sup, "started_at");
        const struct mx_jv *rl = mx_jget(sup, "last_reload");
        const char *res = mx_jstr(rl, "result");
        if (res) {
            mx_put(o, &RL_OK, "", strcmp(res, "ok") == 0 ? "1" : "0");
            mx_put(o, &RL_RESULT, L("result", res), "1");
            num(o, &RL_TIME, "", rl, "at");
        }
    }
    const struct mx_jv *svcs = arr(st, "services");
    for (size_t i = 0; svcs && i < svcs->n; i++) {
        const struct mx_jv *v = &svcs->kid[i];
        const char *name = mx_jstr(v, "name"), *state = mx_jstr(v, "state");
        if (!name)
            continue;
        char svc[1024];
        L("service", name);
        snprintf(svc, sizeof(svc), "%s", lb);
        mx_put(o, &SV_UP, svc, state && strcmp(state, "up") == 0 ? "1" : "0");
        if (state)
            mx_put(o, &SV_STATE, L("service", name, "state", state), "1");
        const char *bin = mx_jstr(v, "binary");
        if (bin && bin[0])
            mx_put(o, &SV_INFO, L("service", name, "binary", bin, "build_id", mx_jstr(v, "build_id")), "1");
        const struct mx_jv *by = mx_jget(v, "restarts_by_cause");
        for (size_t k = 0; by && by->t == MX_JOBJ && k < by->n; k++)
            if (by->kid[k].t == MX_JNUM)
                mx_put(o, &SV_RESTARTS, L("service", name, "cause", by->kid[k].key), by->kid[k].s);
        scaled(o, &SV_UPTIME, svc, v, "uptime_ms", 1000);
        if (mx_jnum(v, "started_at", 0) > 0)
            num(o, &SV_START, svc, v, "started_at");
        scaled(o, &SV_READY, svc, v, "ready_ms", 1000);
        double cpu = mx_proc_cpu((pid_t)mx_jnum(v, "pid", 0));
        if (cpu >= 0)
            mx_putf(o, &SV_CPU, svc, cpu);
        if (mx_jnum(v, "cpu_throttled", -1) >= 0) {
            num(o, &SV_THRP, svc, v, "cpu_throttled");
            scaled(o, &SV_THR, svc, v, "cpu_throttled_ms", 1000);
        }
    }
}

/* Is @name one of the ports `link` listed? */
static bool is_port(const struct mx_jv *links, const char *name)
{
    return mx_jfind(links, "name", name) != NULL;
}

/* One named counter of a service, by the rules (metrics.c's header). */
static void service_counter(struct mx_out *o, const char *svc, const struct mx_jv *c, const struct mx_jv *links)
{
    char lb[1024], head[128], reason[128];
    const char *tail = strrchr(c->key, '.');
    const char *port = NULL, *cls = NULL, *scope = NULL;
    if (tail) {
        snprintf(head, sizeof(head), "%.*s", (int)(tail - c->key), c->key);
        tail++;
        if (strncmp(head, "class.", 6) == 0)
            cls = head + 6;
        else if (is_port(links, head))
            port = head;
        else
            scope = head;
    } else {
        tail = c->key;
    }
    if (mx_drop_reason(tail, reason, sizeof(reason)))
        mx_put(o, &DROPS, L("service", svc, "reason", reason, "port", port, "class", cls, "scope", scope), c->s);
    else
        mx_put(o, mx_is_gauge(tail) ? &SV_GAUGE : &SV_CTR,
               L("service", svc, "counter", tail, "port", port, "class", cls, "scope", scope), c->s);
}

static void render_services(struct mx_out *o, const struct mx_jv *stats, const struct mx_jv *links)
{
    char lb[1024];
    static const struct {
        const char *key;
        const struct mx_desc *d;
    } cols[] = {{"loops", &SV_LOOPS},
                {"sleeps", &SV_SLEEPS},
                {"wakes_sent", &SV_WAKES},
                {"wake_missed", &SV_MISSED},
                {"buffers_held", &SV_HELD},
                {"capture_lost", &SV_CAPLOST},
                {"trace_lost", &SV_TRLOST}};
    const struct mx_jv *svcs = arr(stats, "services");
    for (size_t i = 0; svcs && i < svcs->n; i++) {
        const struct mx_jv *v = &svcs->kid[i];
        const char *name = mx_jstr(v, "name");
        if (!name)
            continue;
        for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++)
            num(o, cols[k].d, L("service", name), v, cols[k].key);
        const struct mx_jv *ctr = mx_jget(v, "counters");
        for (size_t k = 0; ctr && ctr->t == MX_JOBJ && k < ctr->n; k++)
            if (ctr->kid[k].t == MX_JNUM)
                service_counter(o, name, &ctr->kid[k], links);
    }
}

static void render_rings(struct mx_out *o, const struct mx_jv *stats)
{
    char lb[1024], reason[128];
    const struct mx_jv *rings = arr(stats, "rings");
    for (size_t i = 0; rings && i < rings->n; i++) {
        const struct mx_jv *r = &rings->kid[i];
        const char *name = mx_jstr(r, "name");
        if (!name)
            continue;
        mx_put(o, &RG_INFO, L("ring", name, "from", mx_jstr(r, "from"), "to", mx_jstr(r, "to")), "1");
        for (size_t k = 0; k < r->n; k++) {
            const struct mx_jv *c = &r->kid[k];
            if (c->t != MX_JNUM)
                continue;
            const struct mx_desc *d = !strcmp(c->key, "occupancy")     ? &RG_OCC
                                      : !strcmp(c->key, "size")        ? &RG_SIZE
                                      : !strcmp(c->key, "enq_handles") ? &RG_ENQ
                                      : !strcmp(c->key, "wake_sent")   ? &RG_WAKE
                                      : !strcmp(c->key, "sleeps")      ? &RG_SLEEP
                                                                       : NULL;
            if (d)
                mx_put(o, d, L("ring", name), c->s);
            else if (mx_drop_reason(c->key, reason, sizeof(reason)))
                mx_put(o, &RG_DROPS, L("ring", name, "reason", reason), c->s);
            else
                mx_put(o, &RG_CTR, L("ring", name, "counter", c->key), c->s);
        }
    }
}

static void render_pool(struct mx_out *o, const struct mx_jv *stats)
{
    static const struct {
        const char *key;
        const struct mx_desc *d;
    } cols[] = {{"buffers", &PL_BUFS}, {"frame_size_bytes", &PL_FSIZE}, {"free", &PL_FREE},   {"kernel", &PL_KERN},
                {"zones", &PL_ZONES},  {"alloc_fail", &PL_AF},          {"free_bad", &PL_FB}, {"mag_bad", &PL_MB}};
    const struct mx_jv *pool = mx_jget(stats, "pool");
    for (size_t k = 0; pool && k < sizeof(cols) / sizeof(cols[0]); k++)
        num(o, cols[k].d, "", pool, cols[k].key);
    num(o, &SHM, "", stats, "shm_corrupt");
    char lb[512];
    const struct mx_jv *xdp = arr(stats, "xdp");
    for (size_t i = 0; xdp && i < xdp->n; i++) {
        const struct mx_jv *x = &xdp->kid[i];
        for (size_t k = 0; k < x->n; k++)
            if (x->kid[k].t == MX_JNUM)
                mx_put(o, &XDP, L("port", mx_jstr(x, "port"), "verdict", x->kid[k].key), x->kid[k].s);
    }
}

static void render_links(struct mx_out *o, const struct mx_jv *links)
{
    char lb[1024];
    for (size_t i = 0; links && i < links->n; i++) {
        const struct mx_jv *p = &links->kid[i];
        const char *name = mx_jstr(p, "name"), *state = mx_jstr(p, "state");
        if (!name)
            continue;
        const struct mx_jv *addrs = mx_jget(p, "addresses");
        const char *addr =
            addrs && addrs->t == MX_JARR && addrs->n && addrs->kid[0].t == MX_JSTR ? addrs->kid[0].s : NULL;
        mx_put(o, &PT_INFO,
               L("port", name, "ifname", mx_jstr(p, "ifname"), "netns", mx_jstr(p, "netns"), "driver",
                 mx_jstr(p, "driver"), "mac", mx_jstr(p, "mac"), "address", addr),
               "1");
        char pl[1024];
        snprintf(pl, sizeof(pl), "%s", L("port", name));
        mx_put(o, &PT_UP, pl, state && !strcmp(state, "up") ? "1" : "0");
        num(o, &PT_MTU, pl, p, "mtu_bytes");
        num(o, &PT_QUEUES, pl, p, "queues");
        const struct mx_jv *rx = mx_jget(p, "rx"), *tx = mx_jget(p, "tx");
        num(o, &PT_RXP, pl, rx, "packets");
        num(o, &PT_RXB, pl, rx, "bytes");
        num(o, &PT_RXD, pl, rx, "drops");
        num(o, &PT_TXP, pl, tx, "packets");
        num(o, &PT_TXB, pl, tx, "bytes");
        num(o, &PT_TXD, pl, tx, "drops");
    }
}

static void render_stages(struct mx_out *o, const struct mx_jv *sg)
{
    char lb[512];
    num(o, &ST_HZ, "", sg, "tsc_hz");
    const struct mx_jv *svcs = arr(sg, "services");
    for (size_t i = 0; svcs && i < svcs->n; i++) {
        const char *svc = mx_jstr(&svcs->kid[i], "name");
        const struct mx_jv *stages = arr(&svcs->kid[i], "stages");
        for (size_t k = 0; svc && stages && k < stages->n; k++) {
            const struct mx_jv *g = &stages->kid[k];
            L("service", svc, "stage", mx_jstr(g, "name"));
            num(o, &ST_CYC, lb, g, "cycles");
            num(o, &ST_PKT, lb, g, "packets");
            num(o, &ST_CALL, lb, g, "calls");
        }
    }
}

void mx_render(struct mx_out *o, const struct mx_snap *sn)
{
    const struct mx_jv *links = arr(sn->doc[MX_LINK], "links");
    render_status(o, sn->doc[MX_STATUS]);
    render_links(o, links);
    render_services(o, sn->doc[MX_STATS], links);
    render_rings(o, sn->doc[MX_STATS]);
    render_pool(o, sn->doc[MX_STATS]);
    render_stages(o, sn->doc[MX_STAGES]);
}
