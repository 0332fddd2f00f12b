/* SPDX-License-Identifier: MIT */
/*
 * tables/config.c: the typed config blobs' header (tables/config.h): written
 * by the supervisor, checked by each service before it reads a field.
 */
#include "tables/config.h"

#include <errno.h>
#include <string.h>

#include "tables/layout.h"

/* Kept by the linker even if nothing reads it here: the supervisor reads it
 * from the file (tables/layout.h). */
__attribute__((used)) const char tbl_layout_stamp[] = TBL_LAYOUT_STAMP;

void tbl_cfg_hdr_init(struct tbl_cfg_hdr *h, uint32_t kind, uint32_t version, size_t size)
{
    h->magic = TBL_CFG_MAGIC;
    h->kind = kind;
    h->version = version;
    h->size = (uint32_t)size;
}

const void *tbl_cfg_get(const struct ipc_svc *svc, uint32_t version, size_t size, struct ipc_err *err)
{
    const struct ipc_svc_config *cfg = svc->cfg;
    const struct tbl_cfg_hdr *h = (const void *)cfg->extra;
    if (cfg->extra_len < sizeof(*h) || h->magic != TBL_CFG_MAGIC) {
        ipc_errf(err, -EPROTO, "%s: the config blob has no typed part (%u bytes of it)", cfg->name, cfg->extra_len);
        return NULL;
    }
    if (h->kind != cfg->kind || h->version != version || h->size != size || cfg->extra_len != size) {
        ipc_errf(err, -EPROTO,
                 "%s: typed config is kind %u version %u, %u bytes (%u in the blob); this binary takes kind %u "
                 "version %u, %zu bytes",
                 cfg->name, h->kind, h->version, h->size, cfg->extra_len, cfg->kind, version, size);
        return NULL;
    }
    return h;
}
