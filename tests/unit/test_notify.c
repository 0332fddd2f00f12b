/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_notify.c: the supervisor's sd_notify writer
 * (supervisor/notify.c): $NOTIFY_SOCKET parsed as systemd writes it (a path,
 * or an abstract name with '@'), $WATCHDOG_USEC and $WATCHDOG_PID, and the
 * datagrams a socket of the test's own receives as the services come up:
 * STATUS= while they start, READY=1 once all are up (and never again),
 * WATCHDOG=1 when due, STOPPING=1 at the end.
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
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "supervisor/notify.h"
#include "supervisor/sup.h"

static void t_addr(void **state)
{
    (void)state;
    struct sockaddr_un sa;
    socklen_t len;
    assert_int_equal(sup_notify_addr("/run/systemd/notify", &sa, &len), 0);
    assert_string_equal(sa.sun_path, "/run/systemd/notify");
    assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + strlen("/run/systemd/notify") + 1);
    assert_int_equal(sup_notify_addr("@rr-test", &sa, &len), 0);
    assert_int_equal(sa.sun_path[0], '\0');
    assert_memory_equal(sa.sun_path + 1, "rr-test", 7);
    assert_int_equal(len, offsetof(struct sockaddr_un, sun_path) + 8);
    char longp[200];
    memset(longp, 'x', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    const char *bad[] = {NULL, "", "@", "/", "relative/path", longp};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sup_notify_addr(bad[i], &sa, &len), -EINVAL);
}

static void t_watchdog(void **state)
{
    (void)state;
    assert_int_equal(sup_notify_watchdog_ns("3000000", NULL, 42), 3000000000ull);
    assert_int_equal(sup_notify_watchdog_ns("3000000", "42", 42), 3000000000ull);
    assert_int_equal(sup_notify_watchdog_ns("3000000", "43", 42), 0); /* another process's */
    assert_int_equal(sup_notify_watchdog_ns(NULL, NULL, 42), 0);
    assert_int_equal(sup_notify_watchdog_ns("0", NULL, 42), 0);
    assert_int_equal(sup_notify_watchdog_ns("-5", NULL, 42), 0);
    assert_int_equal(sup_notify_watchdog_ns("12abc", NULL, 42), 0);
}

/* The next datagram, or "" when none is waiting. */
static const char *next_msg(int fd, char *buf, size_t len)
{
    ssize_t n = recv(fd, buf, len - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void t_protocol(void **state)
{
    (void)state;
    char name[64];
    snprintf(name, sizeof(name), "@rr-test-notify-%d", (int)getpid());
    struct sockaddr_un sa;
    socklen_t len;
    assert_int_equal(sup_notify_addr(name, &sa, &len), 0);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
    setenv("NOTIFY_SOCKET", name, 1);
    setenv("WATCHDOG_USEC", "1000000", 1); /* 1 s: a ping every 0.5 s */
    unsetenv("WATCHDOG_PID");
    sup_notify_init();
    assert_true(sup_notify_active());

    static struct sup s;
    s.nsvcs = 3;
    const char *names[] = {"router", "driver-a", "driver-b"};
    for (int i = 0; i < 3; i++) {
        snprintf(s.svcs[i].name, sizeof(s.svcs[i].name), "%s", names[i]);
        s.svcs[i].state = SUP_ST_STARTING;
    }
    char buf[256];
    uint64_t t0 = sup_now_ns();
    sup_notify_tick(&s, t0);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "STATUS=starting: 0 of 3 services up\n");
    sup_notify_tick(&s, t0); /* nothing changed: nothing sent */
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "");
    s.svcs[0].state = s.svcs[1].state = SUP_ST_UP;
    sup_notify_tick(&s, t0);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "STATUS=starting: 2 of 3 services up\n");
    s.svcs[2].state = SUP_ST_UP;
    sup_notify_tick(&s, t0);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "READY=1\nSTATUS=3 services up\n");
    s.svcs[1].state = SUP_ST_FAILED;
    sup_notify_tick(&s, t0);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "STATUS=2 of 3 services up; failed: driver-a\n");
    s.svcs[1].state = SUP_ST_UP;
    sup_notify_tick(&s, t0);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "STATUS=3 services up\n"); /* no second READY=1 */

    /* The watchdog: due half an interval after init, then every half interval. */
    uint64_t half = 500000000ull;
    sup_notify_tick(&s, t0 + half + 1000000);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "WATCHDOG=1\n");
    sup_notify_tick(&s, t0 + half + 2000000);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "");
    sup_notify_tick(&s, t0 + 2 * half + 3000000);
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "WATCHDOG=1\n");

    sup_notify_stopping("Terminated");
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "STOPPING=1\nSTATUS=stopping: Terminated\n");
    s.svcs[0].state = SUP_ST_STOPPING;
    sup_notify_tick(&s, t0 + 2 * half + 4000000); /* while stopping, no more STATUS= */
    assert_string_equal(next_msg(fd, buf, sizeof(buf)), "");
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_addr),
        cmocka_unit_test(t_watchdog),
        cmocka_unit_test(t_protocol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
