/*
 * replay-vm: the run description at the head of run.rr, and the check that
 * a replay starts from the same kernel, initrd and disks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/option.h"
#include "qemu/config-file.h"
#include "hw/boards.h"
#include "block/block_int.h"
#include "sysemu/block-backend.h"
#include "sysemu/rrvm.h"
#include "rrvm-internal.h"

static bool sha256_file(const char *path, uint8_t out[32], uint64_t *size)
{
    g_autoptr(GChecksum) ck = g_checksum_new(G_CHECKSUM_SHA256);
    g_autofree uint8_t *buf = g_malloc(1 << 20);
    gsize len = 32;
    FILE *f = fopen(path, "rb");
    size_t n;

    if (!f) {
        return false;
    }
    *size = 0;
    while ((n = fread(buf, 1, 1 << 20, f)) > 0) {
        g_checksum_update(ck, buf, n);
        *size += n;
    }
    fclose(f);
    g_checksum_get_digest(ck, out, &len);
    return true;
}

static void add_image(Rr__Header *h, const char *role, const char *path)
{
    Rr__Header__Image *im;
    uint64_t size;
    uint8_t *digest = g_malloc(32);

    if (!path || !sha256_file(path, digest, &size)) {
        g_free(digest);
        return;
    }
    im = g_new0(Rr__Header__Image, 1);
    rr__header__image__init(im);
    im->role = g_strdup(role);
    im->path = g_strdup(path);
    im->size = size;
    im->sha256.data = digest;
    im->sha256.len = 32;
    h->images = g_renew(Rr__Header__Image *, h->images, h->n_images + 1);
    h->images[h->n_images++] = im;
}

/*
 * The file a disk's data comes from: below snapshot overlays (snapshot=on,
 * libvirt's transient disks) and format/filter nodes, whatever way the disk
 * was given (-drive, or -blockdev as libvirt does).
 */
static const char *disk_base_file(BlockBackend *blk)
{
    BlockDriverState *bs = blk_bs(blk);

    while (bs) {
        BdrvChild *c = bdrv_cow_child(bs);

        if (!c) {
            c = bdrv_filter_child(bs);
        }
        if (!c) {
            c = bs->file;
        }
        if (!c) {
            break;
        }
        bs = c->bs;
    }
    return bs && bs->filename[0] ? bs->filename : NULL;
}

void rrvm_header_images(Rr__Header *h, MachineState *ms)
{
    add_image(h, "kernel", ms->kernel_filename);
    add_image(h, "initrd", ms->initrd_filename);
    for (BlockBackend *blk = blk_all_next(NULL); blk;
         blk = blk_all_next(blk)) {
        g_autofree char *role = g_strdup_printf("disk%zu", h->n_images);

        add_image(h, role, disk_base_file(blk));
    }
}

void rrvm_header_free(Rr__Header *h)
{
    for (size_t i = 0; i < h->n_images; i++) {
        g_free(h->images[i]->role);
        g_free(h->images[i]->path);
        g_free(h->images[i]->sha256.data);
        g_free(h->images[i]);
    }
    g_free(h->images);
    h->images = NULL;
    h->n_images = 0;
}
