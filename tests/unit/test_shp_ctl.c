/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_shp_ctl.c: the supervisor's half of the shaper
 * (supervisor/shaper_ctl.c): a manifest's [shaper PORT] and [class PORT NAME]
 * become the struct shp_cfg the shaper reads from its config blob, which the
 * library accepts and classifies by; other services get no extra bytes. And
 * `shaper set` and `shaper show` against a hostile shaper: a mailbox whose
 * seq, ack and result are spoiled, a stats region whose class counters are
 * named where they are not, a mailbox header that claims a larger region.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "services/shaper/shp.h"
#include "supervisor/shaper_ctl.h"

/* What shaper_ctl.c uses from the rest of the supervisor (beyond log.c), stubbed. */
const char *sup_state_name(enum sup_state st)
{
    (void)st;
    return "up";
}

#define BASE                                                                                    \
    "[port a]\ndriver = tap\nifname = rr-a\naddress = 10.1.0.1/24\n"                            \
    "[port b]\ndriver = tap\nifname = rr-b\naddress = 10.2.0.1/24\n"

static struct sup *t_load(const char *text)
{
    struct sup *s = calloc(1, sizeof(*s));
    struct sup_manifest_err err;
    assert_non_null(s);
    if (sup_manifest_load_string("t.ini", text, &s->m, &err) != 0)
        fail_msg("%s", err.msg);
    return s;
}

static void t_free(struct sup *s)
{
    sup_manifest_free(&s->m);
    free(s);
}

static void test_classes(void **state)
{
    (void)state;
    struct sup *s = t_load(BASE "[shaper b]\nrate = 100mbit\nburst = 64k\noverhead = 20\n"
                                "[class b voice]\nrate = 10mbit\nceil = 20mbit\nprio = 1\nmatch = dscp 46\n"
                                "[class b web]\nrate = 50mbit\nmatch = proto tcp, dport 80-443, dst 10.9.0.0/16\n"
                                "[class b bulk]\nrate = 20mbit\ndefault = yes\n");
    struct sup_svc v = {.kind = IPC_SVC_SHAPER, .port = 1};
    struct shp_cfg c;
    sup_shaper_params(s, &v, &c);
    assert_int_equal(c.rate, 100000000);
    assert_int_equal(c.burst, 65536);
    assert_int_equal(c.overhead, 20);
    assert_int_equal(c.nclasses, 3);
    assert_int_equal(c.default_class, 2);
    assert_string_equal(c.classes[0].name, "voice");
    assert_int_equal(c.classes[0].rate, 10000000);
    assert_int_equal(c.classes[0].ceil, 20000000);
    assert_int_equal(c.classes[0].prio, 1);
    assert_int_equal(c.classes[0].match.fields, SHP_MATCH_DSCP);
    assert_int_equal(c.classes[0].match.dscp, 46);
    assert_string_equal(c.classes[1].name, "web");
    assert_int_equal(c.classes[1].ceil, 100000000); /* default: the port's rate */
    assert_int_equal(c.classes[1].match.fields, SHP_MATCH_PROTO | SHP_MATCH_DPORT | SHP_MATCH_DST);
    assert_int_equal(c.classes[1].match.proto, 6);
    assert_int_equal(c.classes[1].match.dport_lo, 80);
    assert_int_equal(c.classes[1].match.dport_hi, 443);
    assert_int_equal(c.classes[1].match.dst, 0x0a090000u);
    assert_int_equal(c.classes[1].match.dst_len, 16);
    assert_string_equal(c.classes[2].name, "bulk");
    assert_int_equal(c.classes[2].match.fields, 0);

    /* The library takes it and classifies by it. */
    struct shp *sh = calloc(1, sizeof(*sh));
    struct ipc_err err = {{0}};
    assert_non_null(sh);
    if (shp_init(sh, NULL, &c, 0, &err) != 0)
        fail_msg("%s", err.msg);
    struct shp_pkt voice = {.ipv4 = true, .dscp = 46, .proto = 17};
    struct shp_pkt web = {.ipv4 = true, .proto = 6, .dport = 443, .dst = 0x0a090102u};
    struct shp_pkt web_elsewhere = {.ipv4 = true, .proto = 6, .dport = 443, .dst = 0x0a0a0102u};
    assert_int_equal(shp_classify(sh, &voice), 0);
    assert_int_equal(shp_classify(sh, &web), 1);
    assert_int_equal(shp_classify(sh, &web_elsewhere), 2);
    assert_int_equal(shp_class_find(sh, "web"), 1);
    free(sh);

    /* IPv6 prefixes reach the shaper's config as they were written, and classify IPv6 only. */
    struct sup *s6 = t_load(BASE "[shaper b]\nrate = 100mbit\n"
                                 "[class b site]\nrate = 10mbit\nmatch = proto udp, src 2001:db8:1::/48\n"
                                 "[class b far]\nrate = 10mbit\nmatch = dst 2001:db8:ff00::/41\n"
                                 "[class b rest]\nrate = 10mbit\ndefault = yes\n");
    struct sup_svc v6 = {.kind = IPC_SVC_SHAPER, .port = 1};
    sup_shaper_params(s6, &v6, &c);
    assert_int_equal(c.nclasses, 3);
    assert_int_equal(c.classes[0].match.fields, SHP_MATCH_PROTO | SHP_MATCH_SRC6);
    assert_int_equal(c.classes[0].match.src_len, 48);
    static const uint8_t site[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1};
    assert_memory_equal(c.classes[0].match.src6, site, 16);
    assert_int_equal(c.classes[1].match.fields, SHP_MATCH_DST6);
    assert_int_equal(c.classes[1].match.dst_len, 41);
    sh = calloc(1, sizeof(*sh));
    assert_non_null(sh);
    if (shp_init(sh, NULL, &c, 0, &err) != 0)
        fail_msg("%s", err.msg);
    struct shp_pkt p6 = {.ipv6 = true, .proto = 17, .src6 = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 5}};
    assert_int_equal(shp_classify(sh, &p6), 0);
    p6.dst6[0] = 0x20, p6.dst6[1] = 0x01, p6.dst6[2] = 0x0d, p6.dst6[3] = 0xb8, p6.dst6[4] = 0xff, p6.dst6[5] = 0x7f;
    p6.src6[5] = 2;
    assert_int_equal(shp_classify(sh, &p6), 1);
    p6.dst6[5] = 0x80;
    assert_int_equal(shp_classify(sh, &p6), 2);
    struct shp_pkt p4 = {.ipv4 = true, .proto = 17, .src = 0x20010db8u};
    assert_int_equal(shp_classify(sh, &p4), 2);
    free(sh);
    t_free(s6);

    /* A service with no port gets no classes, not another port's. */
    struct sup_svc noport = {.kind = IPC_SVC_SHAPER, .port = -1};
    sup_shaper_params(s, &noport, &c);
    assert_int_equal(c.nclasses, 0);
    assert_int_equal(c.rate, 0);
    t_free(s);
}

static void test_no_classes(void **state)
{
    (void)state;
    struct sup *s = t_load(BASE "[shaper a]\nrate = 50mbit\n");
    struct sup_svc v = {.kind = IPC_SVC_SHAPER, .port = 0};
    struct shp_cfg c;
    sup_shaper_params(s, &v, &c);
    assert_int_equal(c.rate, 50000000);
    assert_int_equal(c.overhead, 24);
    assert_true(c.burst >= 2 * 1514);
    assert_int_equal(c.nclasses, 1);
    assert_int_equal(c.default_class, 0);
    assert_string_equal(c.classes[0].name, "default");
    assert_int_equal(c.classes[0].rate, 50000000);
    assert_int_equal(c.classes[0].ceil, 50000000);
    struct sup_svc vb = {.kind = IPC_SVC_SHAPER, .port = 1}; /* b has no [shaper b] */
    sup_shaper_params(s, &vb, &c);
    assert_int_equal(c.nclasses, 0);
    t_free(s);
}

/* A port takes at most SHP_MAX_CLASSES classes: the manifest refuses the
 * one past it (up once kept the first 16 and dropped the rest quietly). */
static void test_too_many_classes(void **state)
{
    (void)state;
    char text[8192];
    int off = snprintf(text, sizeof(text), BASE "[shaper b]\nrate = 1gbit\n");
    unsigned line = 10; /* [shaper b] is line 9, rate line 10 */
    for (unsigned i = 0; i < SHP_MAX_CLASSES; i++) {
        off += snprintf(text + off, sizeof(text) - (size_t)off, "[class b c%u]\nrate = 1mbit\nmatch = dscp %u\n", i, i);
        line += 3;
    }
    snprintf(text + off, sizeof(text) - (size_t)off, "[class b last]\nrate = 1mbit\ndefault = yes\n");
    struct sup_manifest m;
    struct sup_manifest_err err;
    assert_int_equal(sup_manifest_load_string("t.ini", text, &m, &err), -EINVAL);
    char want[200];
    snprintf(want, sizeof(want),
             "t.ini:%u: [class b last] port b has more than %u classes; its shaper takes at most %u, the default "
             "included",
             line + 1, SHP_MAX_CLASSES, SHP_MAX_CLASSES);
    assert_string_equal(err.msg, want);

    /* Exactly SHP_MAX_CLASSES, the default among them, are taken whole. */
    off = snprintf(text, sizeof(text), BASE "[shaper b]\nrate = 1gbit\n");
    for (unsigned i = 0; i < SHP_MAX_CLASSES - 1; i++)
        off += snprintf(text + off, sizeof(text) - (size_t)off, "[class b c%u]\nrate = 1mbit\nmatch = dscp %u\n", i, i);
    snprintf(text + off, sizeof(text) - (size_t)off, "[class b last]\nrate = 1mbit\ndefault = yes\n");
    struct sup *s = t_load(text);
    struct sup_svc v = {.kind = IPC_SVC_SHAPER, .port = 1};
    struct shp_cfg c;
    sup_shaper_params(s, &v, &c);
    assert_int_equal(c.nclasses, SHP_MAX_CLASSES);
    assert_string_equal(c.classes[c.default_class].name, "last");
    assert_string_equal(c.classes[SHP_MAX_CLASSES - 2].name, "c14");
    t_free(s);
}

/* ---- a running shaper, as the supervisor sees it ---- */

#define T_SHAPED BASE "[shaper b]\nrate = 100mbit\n" \
                      "[class b voice]\nrate = 10mbit\nceil = 20mbit\nmatch = dscp 46\n" \
                      "[class b bulk]\nrate = 50mbit\ndefault = yes\n"

struct t_sh {
    struct sup *s;
    struct sup_svc *v;
    int stats_fd, mbox_fd;
};

/* Service 0 is port b's shaper, up, its stats named as rr-shaper names them. */
static void t_shaper(struct t_sh *t)
{
    struct ipc_err err = {{0}};
    t->s = t_load(T_SHAPED);
    t->s->nsvcs = 1;
    struct sup_svc *v = t->v = &t->s->svcs[0];
    *v = (struct sup_svc){.kind = IPC_SVC_SHAPER, .port = 1, .state = SUP_ST_UP, .wake_fd = -1};
    snprintf(v->name, sizeof(v->name), "shaper-b");
    assert_int_equal(ipc_stats_create("t-shp-stats", &t->stats_fd, &v->stats, &err), 0);
    assert_int_equal(shp_mbox_create("t-shp-mbox", &t->mbox_fd, &v->mbox, &err), 0);
    struct shp_cfg c;
    sup_shaper_params(t->s, v, &c);
    struct ipc_svc_stats *st = v->stats;
    unsigned n = 0;
    for (unsigned i = 0; i < SHP_P_N; i++)
        snprintf(st->ctr_name[n++], IPC_CTR_NAME, "%s", shp_pctr_names[i]);
    snprintf(st->ctr_name[n++], IPC_CTR_NAME, "rate");
    snprintf(st->ctr_name[n++], IPC_CTR_NAME, "full_drops");
    for (unsigned k = 0; k < c.nclasses; k++)
        for (unsigned j = 0; j < SHP_C_N; j++) {
            snprintf(st->ctr_name[n], IPC_CTR_NAME, "class.%.15s.%s", c.classes[k].name, shp_cctr_names[j]);
            ipc_st_rlx(&st->ctr[n++], j == SHP_C_RATE ? c.classes[k].rate : j == SHP_C_CEIL ? c.classes[k].ceil : 0);
        }
    ipc_st_rlx(&st->ctr[SHP_I_RATE], c.rate);
    ipc_st_rel(&st->nctr, n);
}

static void t_shaper_free(struct t_sh *t)
{
    shp_mbox_detach(t->v->mbox);
    ipc_shm_unmap(t->v->stats, sizeof(*t->v->stats));
    close(t->stats_fd);
    close(t->mbox_fd);
    t_free(t->s);
}

/* The supervisor's log lines (stderr) while @fn runs, in a buffer. */
static int t_log_fd = -1, t_log_saved = -1;

static void t_log_begin(void)
{
    fflush(stderr);
    t_log_fd = memfd_create("t-log", 0);
    t_log_saved = dup(STDERR_FILENO);
    assert_true(t_log_fd >= 0 && t_log_saved >= 0);
    dup2(t_log_fd, STDERR_FILENO);
}

static char t_log[8192];

static const char *t_log_end(void)
{
    dup2(t_log_saved, STDERR_FILENO);
    close(t_log_saved);
    ssize_t n = pread(t_log_fd, t_log, sizeof(t_log) - 1, 0);
    t_log[n > 0 ? n : 0] = '\0';
    close(t_log_fd);
    return t_log;
}

/* One control request; its answer text in @out (the caller frees). */
static bool t_ctl(struct sup *s, const char *req, char **out, struct sup_ctl_wait *w)
{
    char line[200], *argv[8];
    int argc = 0;
    snprintf(line, sizeof(line), "%s", req);
    for (char *save = NULL, *tok = strtok_r(line, " ", &save); tok && argc < 8; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    size_t len;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    *w = (struct sup_ctl_wait){0};
    bool ok = sup_ctl_shaper(s, argv, argc, f, w);
    fclose(f);
    return ok;
}

/* The pending `set` @w, once the shaper wrote what it wrote. */
static bool t_poll(struct sup *s, struct sup_ctl_wait *w, char **out, bool *ok)
{
    size_t len;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    bool done = sup_shaper_set_poll(s, w, sup_now_ns(), f, ok);
    fclose(f);
    return done;
}

/*
 * The shaper writes all of its mailbox. A spoiled ack (12345 before any
 * command) must not lock `shaper set` out for good, a spoiled seq must not
 * become the next command's number, an ack that answers no command sent and
 * a result that is no errno are answered as such, not waited on or taken
 * for success; each is logged with its offset and counted in shm_corrupt.
 */
static void test_mbox_hostile(void **state)
{
    (void)state;
    struct t_sh t;
    t_shaper(&t);
    struct shp_mbox *mb = t.v->mbox;
    struct sup_ctl_wait w;
    char *out = NULL;
    bool ok;

    ipc_st_rlx(&mb->ack, 12345);
    t_log_begin();
    bool sent = t_ctl(t.s, "set b rate 70mbit", &out, &w);
    const char *log = t_log_end();
    if (!sent)
        fail_msg("a spoiled ack locked shaper set out: %s", out);
    free(out);
    assert_true(w.pending);
    assert_int_equal(ipc_ld_rlx(&mb->seq), 1);
    assert_int_equal(ipc_ld_rlx(&mb->cls), 0);
    assert_non_null(strstr(log, "shaper-b: mailbox ack at offset 0x80 is 12345, neither the last command nor the "
                                "one before; not trusted"));
    ipc_st_rlx(&mb->result, 0);
    ipc_st_rel(&mb->ack, 1); /* the shaper answers */
    assert_true(t_poll(t.s, &w, &out, &ok));
    assert_true(ok);
    assert_string_equal(out, "b (port): rate 70mbit\n");
    free(out);

    /* Its seq overwritten: the next command is the supervisor's 2, not 2^64 - 1 + 1. */
    ipc_st_rlx(&mb->seq, UINT64_MAX);
    t_log_begin();
    sent = t_ctl(t.s, "set b voice rate 5mbit", &out, &w);
    log = t_log_end();
    if (!sent)
        fail_msg("a spoiled seq locked shaper set out: %s", out);
    free(out);
    assert_int_equal(ipc_ld_rlx(&mb->seq), 2);
    assert_int_equal(ipc_ld_rlx(&mb->cls), 1);
    assert_int_equal(ipc_ld_rlx(&mb->rate), 5000000);
    assert_non_null(strstr(log, "shaper-b: mailbox seq at offset 0x40 is 18446744073709551615"));
    /* An ack that answers nothing sent: a corrupt answer now, not a wait. */
    ipc_st_rel(&mb->ack, 999);
    t_log_begin();
    bool done = t_poll(t.s, &w, &out, &ok);
    log = t_log_end();
    assert_true(done);
    assert_false(ok);
    assert_non_null(strstr(out, "shaper-b answered with a corrupt mailbox (ack 999 for command 2)"));
    assert_non_null(strstr(log, "mailbox ack at offset 0x80 is 999"));
    free(out);

    /* A result that is no errno. */
    t_log_begin();
    sent = t_ctl(t.s, "set b rate 60mbit", &out, &w);
    free(out);
    assert_true(sent);
    ipc_st_rlx(&mb->result, 1ull << 40);
    ipc_st_rel(&mb->ack, 3);
    done = t_poll(t.s, &w, &out, &ok);
    log = t_log_end();
    assert_true(done);
    assert_false(ok);
    assert_non_null(strstr(out, "answered with result 1099511627776, which is not an error number"));
    assert_non_null(strstr(log, "mailbox result at offset 0x88 is 1099511627776, not an errno"));
    free(out);
    assert_int_equal(t.s->shm_corrupt, 5); /* ack 12345, seq, ack 999 twice (the poll, then the next set), result */
    t_shaper_free(&t);
}

/*
 * The class a `shaper set` names is the manifest's, at the index the
 * shaper's config gives it, whatever the stats region says: a region that
 * names its counter 0 "class.voice.rate" must not turn a change of voice into
 * a change of the port, nor one named at the region's last slot send a read
 * past it; `shaper show` lists the manifest's classes, never a name the
 * region made up (with a quote in it, into the JSON).
 */
static void test_stats_hostile_class_counters(void **state)
{
    (void)state;
    struct t_sh t;
    t_shaper(&t);
    struct ipc_svc_stats *st = t.v->stats;
    snprintf(st->ctr_name[0], IPC_CTR_NAME, "class.voice.rate");
    snprintf(st->ctr_name[IPC_SVC_MAX_CTR - 1], IPC_CTR_NAME, "class.x.rate");
    snprintf(st->ctr_name[IPC_SVC_MAX_CTR - 2], IPC_CTR_NAME, "class.\"evil.rate");
    ipc_st_rel(&st->nctr, IPC_SVC_MAX_CTR);
    struct sup_ctl_wait w;
    char *out = NULL;

    assert_true(t_ctl(t.s, "set b voice rate 5mbit", &out, &w));
    free(out);
    assert_int_equal(ipc_ld_rlx(&t.v->mbox->cls), 1); /* voice is class 0: target 1, not the port */
    ipc_st_rel(&t.v->mbox->ack, ipc_ld_rlx(&t.v->mbox->seq));

    assert_false(t_ctl(t.s, "set b x rate 5mbit", &out, &w));
    assert_non_null(strstr(out, "port b has no class \"x\""));
    free(out);

    assert_true(t_ctl(t.s, "show b json", &out, &w));
    assert_null(strstr(out, "evil"));
    assert_null(strstr(out, "\"x\""));
    assert_non_null(
        strstr(out, "{\"name\":\"voice\",\"rate_bits_per_second\":10000000,\"ceil_bits_per_second\":20000000,"));
    assert_non_null(strstr(out, "{\"name\":\"bulk\",\"rate_bits_per_second\":50000000,"));
    free(out);
    t_shaper_free(&t);
}

/*
 * `shaper set` reads rates with the manifest's parser (tc's units, the byte
 * forms too, no bare numbers) and refuses what `check` would: a port lowered
 * below what its classes guarantee, a class whose rate would make the
 * guarantees overflow the port, a ceil above the port or below the rate.
 * Nothing refused reaches the mailbox.
 */
static void test_set_rates_and_guarantees(void **state)
{
    (void)state;
    struct t_sh t;
    t_shaper(&t); /* port 100mbit; voice 10mbit ceil 20mbit, bulk 50mbit */
    struct shp_mbox *mb = t.v->mbox;
    struct sup_ctl_wait w;
    char *out = NULL;
    static const struct {
        const char *req, *err;
    } bad[] = {
        {"set b rate 55mbit", "shaper set: port b's classes guarantee 60mbit in all, more than 55mbit; lower their rates first\n"},
        {"set b voice rate 50.5mbit", "shaper set: class voice's rate 50.5mbit and the other classes' 50mbit add up to "
                                      "100.5mbit, more than the port's rate 100mbit\n"},
        {"set b voice ceil 101mbit", "shaper set: a class's rate and ceil are at most the port's rate (100mbit)\n"},
        {"set b voice rate 15mbit ceil 12mbit", "shaper set: ceil 12mbit is below the rate 15mbit\n"},
        {"set b rate 64000", "shaper set: rate: \"64000\" has no unit, expected a rate such as 100mbit (bit, kbit, "
                             "mbit, gbit, tbit, bps, kbps, mbps, gbps or tbps)\n"},
        {"set b rate 50mbx", "shaper set: rate: \"50mbx\" has an unknown unit \"mbx\", expected bit, kbit, mbit, "
                             "gbit, tbit, bps, kbps, mbps, gbps or tbps\n"},
        {"set b rate 2tbit", "shaper set: rate: 2tbit is out of range 1kbit..1tbit\n"},
        {"set b voice rate 1.0000005kbit", "shaper set: rate: 1.0000005kbit is not a whole number of bits per second\n"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(t_ctl(t.s, bad[i].req, &out, &w));
        if (strcmp(out, bad[i].err) != 0)
            fail_msg("%s: said \"%s\", expected \"%s\"", bad[i].req, out, bad[i].err);
        free(out);
        assert_int_equal(ipc_ld_rlx(&mb->seq), 0);
    }
    /* The byte forms: 1.25mbps is 10mbit; 60mbit is what the classes guarantee. */
    assert_true(t_ctl(t.s, "set b voice rate 1.25mbps", &out, &w));
    free(out);
    assert_int_equal(ipc_ld_rlx(&mb->rate), 10000000);
    ipc_st_rel(&mb->ack, ipc_ld_rlx(&mb->seq));
    assert_true(t_ctl(t.s, "set b rate 60mbit", &out, &w));
    free(out);
    assert_int_equal(ipc_ld_rlx(&mb->rate), 60000000);
    ipc_st_rel(&mb->ack, ipc_ld_rlx(&mb->seq));
    assert_true(t_ctl(t.s, "set b voice rate 50mbit", &out, &w)); /* 50 + 50 = the port's 100 */
    free(out);
    t_shaper_free(&t);
}

/*
 * The mailbox region is one fixed layout: the supervisor unmaps that much,
 * not what the header, which the shaper can write, says. A header claiming
 * two pages must not unmap the page after the mailbox.
 */
static void test_mbox_detach_hostile_size(void **state)
{
    (void)state;
    struct ipc_err err = {{0}};
    int fd;
    struct shp_mbox *mb;
    assert_int_equal(shp_mbox_create("t-mbox-size", &fd, &mb, &err), 0);
    ipc_shm_unmap(mb, sizeof(*mb));
    /* The mailbox again, with a page of our own right after it. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *base = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(base != MAP_FAILED);
    mb = mmap(base, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    assert_true((void *)mb == (void *)base);
    uint8_t *after = base + page;
    after[0] = 42;
    mb->shm.size = 2 * (uint64_t)page;
    shp_mbox_detach(mb);
    unsigned char vec;
    if (mincore(after, page, &vec) != 0)
        fail_msg("the page after the mailbox was unmapped with it");
    assert_int_equal(after[0], 42);
    munmap(after, page);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_set_rates_and_guarantees),
        cmocka_unit_test(test_no_classes),
        cmocka_unit_test(test_too_many_classes),
        cmocka_unit_test(test_mbox_hostile),
        cmocka_unit_test(test_stats_hostile_class_counters),
        cmocka_unit_test(test_mbox_detach_hostile_size),
    };
    return cmocka_run_group_tests_name("shaper_ctl", tests, NULL, NULL);
}
