/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_tap_uring.c: the TAP driver's io_uring is restricted
 * (drivers/tap/uring.c). On the ring tap_uring_init() builds, exactly as the
 * driver does (a pipe's read end standing in for the TAP fd, registered as
 * fixed file 0): what the loop submits works (eventfd write, poll linked to
 * a read with CQE_SKIP_SUCCESS, readv and a poll on fixed file 0,
 * writev, the poll's removal, cancel); an opcode off the list completes with
 * -EACCES (OPENAT, the open a compromised driver would want, also NOP,
 * TIMEOUT, SOCKET, CONNECT, SENDMSG); an allowed opcode with a flag off the
 * list (ASYNC) too; a fixed file other than the device's does not exist
 * (-EBADF); and every io_uring_register() is refused, a second set of
 * restrictions and more files included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "drivers/tap/uring.h"

struct t_ring {
    struct io_uring ring;
    int efd;
    int pipe[2];
};

static int t_setup(void **state)
{
    static struct t_ring t;
    struct io_uring_params p;
    struct ipc_err err = {{0}};
    if (pipe(t.pipe) < 0)
        return -1;
    int ret = tap_uring_init(&t.ring, 16, t.pipe[0], &p, "test", &err);
    if (ret == -ENOSYS || ret == -EPERM) {
        print_message("io_uring unavailable here: %s\n", err.msg);
        return -1;
    }
    if (ret < 0) {
        print_message("%s\n", err.msg);
        return -1;
    }
    t.efd = eventfd(0, EFD_NONBLOCK);
    if (t.efd < 0)
        return -1;
    *state = &t;
    return 0;
}

static int t_teardown(void **state)
{
    struct t_ring *t = *state;
    io_uring_queue_exit(&t->ring);
    close(t->efd);
    close(t->pipe[0]);
    close(t->pipe[1]);
    return 0;
}

/* Submit what is queued and return the next completion's result. */
static int t_result(struct t_ring *t, uint64_t *ud)
{
    struct io_uring_cqe *cqe;
    io_uring_submit(&t->ring);
    int ret = io_uring_wait_cqe(&t->ring, &cqe);
    assert_int_equal(ret, 0);
    int res = cqe->res;
    if (ud)
        *ud = io_uring_cqe_get_data64(cqe);
    io_uring_cqe_seen(&t->ring, cqe);
    return res;
}

static struct io_uring_sqe *t_sqe(struct t_ring *t)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
    assert_non_null(sqe);
    return sqe;
}

static void test_tap_uring_allowed_ops_work(void **state)
{
    struct t_ring *t = *state;
    /* WRITE to an eventfd: the wake-up the driver owes the router. */
    static const uint64_t one = 1;
    io_uring_prep_write(t_sqe(t), t->efd, &one, sizeof(one), 0);
    assert_int_equal(t_result(t, NULL), (int)sizeof(one));

    /* POLL_ADD linked to a READ, the poll's success skipped: our eventfd. */
    uint64_t v = 0;
    struct io_uring_sqe *p = t_sqe(t);
    io_uring_prep_poll_add(p, t->efd, POLLIN);
    p->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
    io_uring_sqe_set_data64(p, 1);
    struct io_uring_sqe *r = t_sqe(t);
    io_uring_prep_read(r, t->efd, &v, sizeof(v), 0);
    io_uring_sqe_set_data64(r, 2);
    uint64_t ud;
    assert_int_equal(t_result(t, &ud), (int)sizeof(v));
    assert_int_equal(ud, 2);
    assert_int_equal(v, 1);

    /* WRITEV and READV: a packet out, a receive slot in, from the device
     * as the driver names it, fixed file 0. */
    char out[2][4] = {"abc", "def"}, in[2][4];
    struct iovec ov[2] = {{out[0], 3}, {out[1], 3}}, iv[2] = {{in[0], 3}, {in[1], 3}};
    io_uring_prep_writev(t_sqe(t), t->pipe[1], ov, 2, 0);
    assert_int_equal(t_result(t, NULL), 6);
    struct io_uring_sqe *rv = t_sqe(t);
    io_uring_prep_readv(rv, 0, iv, 2, 0);
    rv->flags |= IOSQE_FIXED_FILE;
    assert_int_equal(t_result(t, NULL), 6);
    assert_memory_equal(in[0], "abc", 3);
    assert_memory_equal(in[1], "def", 3);

    /* POLL_ADD on an idle fd, then POLL_REMOVE: the device's poll. */
    struct io_uring_sqe *ms = t_sqe(t);
    io_uring_prep_poll_add(ms, 0, POLLIN);
    ms->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(ms, 7);
    io_uring_submit(&t->ring);
    struct io_uring_sqe *rm = t_sqe(t);
    io_uring_prep_poll_remove(rm, 7);
    io_uring_sqe_set_data64(rm, 8);
    int seen = 0;
    for (int i = 0; i < 2; i++) {
        int res = t_result(t, &ud);
        if (ud == 8)
            assert_int_equal(res, 0);
        else
            assert_int_equal(res, -ECANCELED);
        seen |= ud == 8 ? 1 : 2;
    }
    assert_int_equal(seen, 3);

    /* ASYNC_CANCEL (ANY) with nothing in flight: nothing to cancel, and
     * no restriction in the way. */
    io_uring_prep_cancel64(t_sqe(t), 0, IORING_ASYNC_CANCEL_ANY);
    int res = t_result(t, NULL);
    assert_true(res >= 0 || res == -ENOENT);
}

static void test_tap_uring_openat_refused(void **state)
{
    struct t_ring *t = *state;
    io_uring_prep_openat(t_sqe(t), AT_FDCWD, "/etc/passwd", O_RDONLY, 0);
    assert_int_equal(t_result(t, NULL), -EACCES);
    /* The same open outside the ring works: the restriction refused it, not the file. */
    int fd = open("/etc/passwd", O_RDONLY);
    assert_true(fd >= 0);
    close(fd);
}

static void test_tap_uring_other_ops_refused(void **state)
{
    struct t_ring *t = *state;
    io_uring_prep_nop(t_sqe(t));
    assert_int_equal(t_result(t, NULL), -EACCES);

    struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 1000};
    io_uring_prep_timeout(t_sqe(t), &ts, 0, 0);
    assert_int_equal(t_result(t, NULL), -EACCES);

    io_uring_prep_socket(t_sqe(t), AF_INET, SOCK_DGRAM, 0, 0);
    assert_int_equal(t_result(t, NULL), -EACCES);

    struct sockaddr_storage sa;
    memset(&sa, 0, sizeof(sa));
    io_uring_prep_connect(t_sqe(t), t->efd, (struct sockaddr *)&sa, sizeof(sa));
    assert_int_equal(t_result(t, NULL), -EACCES);

    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    io_uring_prep_sendmsg(t_sqe(t), t->efd, &mh, 0);
    assert_int_equal(t_result(t, NULL), -EACCES);
}

static void test_tap_uring_flags_refused(void **state)
{
    struct t_ring *t = *state;
    static const uint64_t one = 1;
    struct io_uring_sqe *sqe = t_sqe(t);
    io_uring_prep_write(sqe, t->efd, &one, sizeof(one), 0);
    sqe->flags |= IOSQE_ASYNC;
    assert_int_equal(t_result(t, NULL), -EACCES);

    /* FIXED_FILE is allowed, and names only the device: file 1 is none. */
    sqe = t_sqe(t);
    io_uring_prep_write(sqe, 1, &one, sizeof(one), 0);
    sqe->flags |= IOSQE_FIXED_FILE;
    assert_int_equal(t_result(t, NULL), -EBADF);
}

static void test_tap_uring_register_refused(void **state)
{
    struct t_ring *t = *state;
    char buf[64];
    struct iovec iov = {buf, sizeof(buf)};
    assert_int_equal(io_uring_register_buffers(&t->ring, &iov, 1), -EACCES);
    assert_int_equal(io_uring_register_files(&t->ring, &t->efd, 1), -EACCES);
    assert_int_equal(io_uring_register_files_update(&t->ring, 0, &t->efd, 1), -EACCES);
    assert_int_equal(io_uring_register_eventfd(&t->ring, t->efd), -EACCES);
    struct io_uring_restriction res = {.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_OPENAT};
    assert_int_equal(io_uring_register((unsigned)t->ring.ring_fd, IORING_REGISTER_RESTRICTIONS, &res, 1), -EACCES);
    /* Still refused after the attempt. */
    io_uring_prep_openat(t_sqe(t), AT_FDCWD, "/etc/passwd", O_RDONLY, 0);
    assert_int_equal(t_result(t, NULL), -EACCES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tap_uring_allowed_ops_work, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_tap_uring_openat_refused, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_tap_uring_other_ops_refused, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_tap_uring_flags_refused, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_tap_uring_register_refused, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
