/* SPDX-License-Identifier: MIT */
/*
 * supervisor/manifest.c: the manifest loader's front door. It reads a file
 * (bounded, NUL bytes refused), runs the rooms in order on the text (the
 * reader, manifest_ini.c, which feeds the schema, manifest_schema.c, and its
 * value parsers, manifest_value.c; then the whole-manifest checks,
 * manifest_check.c), and owns the one error message they write: only the
 * first error is kept, since later ones are usually its consequences. It
 * also frees a manifest and looks things up in one by name.
 */
#include "supervisor/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/manifest_impl.h"

#define SUP_FILE_MAX (1u << 20)

void sup_append(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
    va_list ap;
    if (*n >= len)
        return;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *n, len - *n, fmt, ap);
    va_end(ap);
    if (w > 0)
        *n += (size_t)w;
}

int sup_fail(struct sup_pctx *pc, unsigned line, const char *section, const char *key, const char *fmt, ...)
{
    if (pc->rc)
        return pc->rc;
    struct sup_manifest_err *e = pc->err;
    size_t n = 0;
    char msg[SUP_MANIFEST_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line)
        sup_append(e->msg, sizeof e->msg, &n, "%s:%u: ", pc->file, line);
    else
        sup_append(e->msg, sizeof e->msg, &n, "%s: ", pc->file);
    if (section)
        sup_append(e->msg, sizeof e->msg, &n, "[%s] ", section);
    if (key)
        sup_append(e->msg, sizeof e->msg, &n, "%s: ", key);
    sup_append(e->msg, sizeof e->msg, &n, "%s", msg);
    e->line = line;
    pc->rc = -EINVAL;
    return pc->rc;
}

int sup_oom(struct sup_pctx *pc)
{
    snprintf(pc->err->msg, sizeof pc->err->msg, "%s: out of memory", pc->file);
    return pc->rc = -ENOMEM;
}

int sup_manifest_load_string(const char *name, const char *text, struct sup_manifest *m,
                             struct sup_manifest_err *err)
{
    struct sup_manifest_err local;
    struct sup_pctx pc = {.file = name, .pos = text, .m = m, .err = err ? err : &local};
    memset(m, 0, sizeof *m);
    memset(pc.err, 0, sizeof *pc.err);
    sup_defaults(&pc, &sup_sections[SUP_SEC_ROUTER], &m->router);
    snprintf(m->router.src.section, sizeof m->router.src.section, "router");
    if (!sup_ini_read(&pc))
        sup_check(&pc);
    free(pc.svc);
    /* FNV-1a of the text: a supervisor adopts only services started from the same manifest (adopt.c). */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        h = (h ^ *c) * 0x100000001b3ull;
    m->text_hash = h;
    if (!pc.rc && !(m->text = strdup(text)))
        pc.rc = sup_oom(&pc);
    if (pc.rc)
        sup_manifest_free(m);
    return pc.rc;
}

int sup_manifest_load_file(const char *path, struct sup_manifest *m, struct sup_manifest_err *err)
{
    struct sup_manifest_err local;
    struct stat st;
    char *buf = NULL;
    size_t n = 0;
    int e, fd;
    if (!err)
        err = &local;
    memset(m, 0, sizeof *m);
    memset(err, 0, sizeof *err);
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer, forever; only a regular file is read. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        goto out_errno;
    if (fstat(fd, &st) < 0)
        goto out_close;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        goto out_close;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(err->msg, sizeof err->msg, "%s: not a regular file", path);
        return -EINVAL;
    }
    /* Read one byte past the limit, so that a file that grew after fstat
     * (or a pipe) is still caught as too large. */
    buf = malloc(SUP_FILE_MAX + 2);
    if (!buf) {
        errno = ENOMEM;
        goto out_close;
    }
    while (n <= SUP_FILE_MAX) {
        ssize_t r = read(fd, buf + n, SUP_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto out_close;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (n > SUP_FILE_MAX) {
        free(buf);
        snprintf(err->msg, sizeof err->msg, "%s: larger than %u bytes", path, SUP_FILE_MAX);
        return -EFBIG;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        unsigned line = 1;
        for (char *p = buf; *p; p++)
            line += *p == '\n';
        free(buf);
        err->line = line;
        snprintf(err->msg, sizeof err->msg, "%s:%u: syntax error: a NUL byte", path, line);
        return -EINVAL;
    }
    int rc = sup_manifest_load_string(path, buf, m, err);
    free(buf);
    return rc;

out_close:
    e = errno;
    free(buf);
    close(fd);
    errno = e;
out_errno:
    e = errno;
    snprintf(err->msg, sizeof err->msg, "%s: cannot read: %s", path, strerror(e));
    return -e;
}

void sup_manifest_free(struct sup_manifest *m)
{
    free(m->ports);
    free(m->routes);
    free(m->neighs);
    free(m->shapers);
    free(m->classes);
    free(m->services);
    free(m->text);
    memset(m, 0, sizeof *m);
}

int sup_manifest_port(const struct sup_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->nports; i++)
        if (!m->ports[i].vacant && strcmp(m->ports[i].name, name) == 0)
            return (int)i;
    return -1;
}

int sup_manifest_service(const struct sup_manifest *m, const char *name)
{
    for (size_t i = 0; i < m->nservices; i++)
        if (strcmp(m->services[i].name, name) == 0)
            return (int)i;
    return -1;
}
