/*
 * run.rr writer.
 *
 * Events are packed (outside any lock, so vCPU threads pack in parallel)
 * into a varint-delimited record, then appended under `lock` to the open
 * chunk.  Taking `lock` is what assigns the global index, so the file
 * order is a total order consistent with each thread's program order and
 * with happens-before between threads.
 *
 * A chunk is compressed and written when it reaches chunk_raw_bytes, when
 * it is older than flush_ms (checked on append), on rr_writer_flush and on
 * close.  The thread that fills a chunk swaps it for an empty buffer, takes
 * `io_lock` and drops `lock` before compressing: other vCPUs keep
 * appending during the ~1 ms of zstd instead of stalling on the log.
 * `io_lock` is always taken while still holding `lock`, so chunks reach
 * the file in index order; a producer only waits on it when zstd falls
 * behind (back-pressure).  Writing whole chunks with one write(2) each is
 * what makes a crashed recording readable up to its last complete chunk.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "codec.h"
#include "format.h"

#define DEFAULT_CHUNK_RAW  (256u << 10)
#define DEFAULT_FLUSH_MS   1000u
#define CLOCK_CHECK_EVERY  64     /* appends between flush_ms clock reads */
#define STACK_PACK_BYTES   512    /* records up to this size avoid malloc */

struct rr_writer {
	/* lock: the open chunk and the event numbering */
	pthread_mutex_t lock;
	uint64_t n_events;
	uint8_t *raw;
	size_t raw_len, raw_cap;
	uint64_t chunk_first;
	uint32_t chunk_count;
	uint64_t chunk_born_ns;   /* monotonic time of its first event */
	uint32_t since_clock;

	/* io_lock: turning full chunks into file bytes (see top of file) */
	pthread_mutex_t io_lock;
	int fd;
	_Atomic uint64_t file_off; /* where the next chunk goes; read in
	                              error messages without io_lock */
	uint8_t *spare;           /* empty buffer swapped in for a full one */
	size_t spare_cap;
	uint8_t *out;             /* chunk header + compressed payload */
	size_t out_cap;
	ZSTD_CCtx *cctx;
	rr_chunk_info *index;
	size_t n_index, index_cap;

	/* set at open, read-only after */
	int level;
	uint32_t chunk_raw_bytes, flush_ms;
	int fsync;

	/*
	 * Once a write fails the file is in an unknown state: refuse more.
	 * fail_err is written (under io_lock) before failed is set.
	 */
	atomic_int failed;
	rr_error fail_err;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 4096;
	while (n < need)
		n *= 2;
	uint8_t *p = realloc(*buf, n);
	if (!p)
		return -1;
	*buf = p;
	*cap = n;
	return 0;
}

static int fail(rr_writer *w, rr_error *err, const char *what)
{
	int e = errno;
	rr_set_error(&w->fail_err, w->file_off, "%s: %s", what, strerror(e));
	atomic_store(&w->failed, 1);
	if (err)
		*err = w->fail_err;
	return -1;
}

static int failed_error(rr_writer *w, rr_error *err)
{
	if (err)
		*err = w->fail_err;
	return -1;
}

/* Compress and write one chunk.  Caller holds io_lock only. */
static int write_chunk(rr_writer *w, const uint8_t *raw, size_t raw_len,
		       uint64_t first, uint32_t count, rr_error *err)
{
	if (atomic_load(&w->failed))
		return failed_error(w, err);

	size_t bound = ZSTD_compressBound(raw_len);
	if (grow(&w->out, &w->out_cap, RR_CHUNK_HDR_LEN + bound))
		return fail(w, err, "out of memory for chunk");
	size_t clen = ZSTD_compressCCtx(w->cctx, w->out + RR_CHUNK_HDR_LEN,
					bound, raw, raw_len, w->level);
	if (ZSTD_isError(clen)) {
		rr_set_error(&w->fail_err, w->file_off, "zstd: %s",
			     ZSTD_getErrorName(clen));
		atomic_store(&w->failed, 1);
		return failed_error(w, err);
	}

	struct rr_chunk_hdr h = {
		.kind = RR_CHUNK_EVENTS,
		.first_index = first,
		.count = count,
		.raw_len = (uint32_t)raw_len,
		.comp_len = (uint32_t)clen,
		.payload_crc = rr_crc32c(0, w->out + RR_CHUNK_HDR_LEN, clen),
	};
	rr_chunk_hdr_encode(w->out, &h);
	if (write_all(w->fd, w->out, RR_CHUNK_HDR_LEN + clen))
		return fail(w, err, "write chunk");
	if (w->fsync && fdatasync(w->fd))
		return fail(w, err, "fdatasync");

	if (w->n_index == w->index_cap) {
		size_t n = w->index_cap ? w->index_cap * 2 : 256;
		rr_chunk_info *p = realloc(w->index, n * sizeof(*p));
		if (!p)
			return fail(w, err, "out of memory for index");
		w->index = p;
		w->index_cap = n;
	}
	w->index[w->n_index++] = (rr_chunk_info){
		.offset = w->file_off, .first_index = first, .count = count,
		.raw_len = (uint32_t)raw_len, .comp_len = (uint32_t)clen,
	};
	w->file_off += RR_CHUNK_HDR_LEN + clen;
	return 0;
}

/*
 * End the open chunk and write it.  Called with `lock` held; returns with
 * no lock held.  `lock` is released as soon as the chunk is swapped out.
 */
static int flush_unlock(rr_writer *w, rr_error *err)
{
	if (w->chunk_count == 0) {
		pthread_mutex_unlock(&w->lock);
		return atomic_load(&w->failed) ? failed_error(w, err) : 0;
	}
	pthread_mutex_lock(&w->io_lock);
	uint8_t *raw = w->raw;
	size_t raw_len = w->raw_len, raw_cap = w->raw_cap;
	uint64_t first = w->chunk_first;
	uint32_t count = w->chunk_count;
	w->raw = w->spare;
	w->raw_cap = w->spare_cap;
	w->spare = NULL;
	w->spare_cap = 0;
	w->raw_len = 0;
	w->chunk_first += count;
	w->chunk_count = 0;
	pthread_mutex_unlock(&w->lock);

	int ret = write_chunk(w, raw, raw_len, first, count, err);
	w->spare = raw;
	w->spare_cap = raw_cap;
	pthread_mutex_unlock(&w->io_lock);
	return ret;
}

rr_writer *rr_writer_open(const char *path, const Rr__Header *hdr,
			  int zstd_level, rr_error *err)
{
	rr_writer_opts o = { .zstd_level = zstd_level };
	return rr_writer_open_opts(path, hdr, &o, err);
}

rr_writer *rr_writer_open_opts(const char *path, const Rr__Header *hdr,
			       const rr_writer_opts *opts, rr_error *err)
{
	rr_writer_opts o = opts ? *opts : (rr_writer_opts){ 0 };
	rr_writer *w = calloc(1, sizeof(*w));
	uint8_t *hbuf = NULL;

	if (!w) {
		rr_set_error(err, 0, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->io_lock, NULL);
	w->fd = -1;
	/* 0: default; negative: zstd's fast levels (bigger, cheaper). */
	w->level = o.zstd_level ? o.zstd_level : RR_DEFAULT_ZSTD_LEVEL;
	if (w->level > ZSTD_maxCLevel())
		w->level = ZSTD_maxCLevel();
	if (w->level < ZSTD_minCLevel())
		w->level = ZSTD_minCLevel();
	w->chunk_raw_bytes = o.chunk_raw_bytes ? o.chunk_raw_bytes
					       : DEFAULT_CHUNK_RAW;
	if (w->chunk_raw_bytes > RR_MAX_CHUNK_RAW / 2)
		w->chunk_raw_bytes = RR_MAX_CHUNK_RAW / 2;
	w->flush_ms = o.flush_ms ? o.flush_ms : DEFAULT_FLUSH_MS;
	w->fsync = o.fsync;

	w->cctx = ZSTD_createCCtx();
	if (!w->cctx || grow(&w->raw, &w->raw_cap, w->chunk_raw_bytes + 64) ||
	    grow(&w->spare, &w->spare_cap, w->chunk_raw_bytes + 64)) {
		rr_set_error(err, 0, "out of memory");
		goto fail;
	}

	/* Header: our version wins over whatever the caller left in it. */
	Rr__Header h = hdr ? *hdr : (Rr__Header)RR__HEADER__INIT;
	h.format_version = RR_FORMAT_VERSION;
	size_t hlen = rr__header__get_packed_size(&h);
	if (hlen > RR_MAX_HEADER_LEN) {
		rr_set_error(err, RR_FILE_HDR_LEN, "header too large (%zu bytes)",
			     hlen);
		goto fail;
	}
	hbuf = malloc(RR_FILE_HDR_LEN + hlen);
	if (!hbuf) {
		rr_set_error(err, 0, "out of memory");
		goto fail;
	}
	rr__header__pack(&h, hbuf + RR_FILE_HDR_LEN);
	memcpy(hbuf, RR_FILE_MAGIC, RR_FILE_MAGIC_LEN);
	put_le32(hbuf + 8, RR_FORMAT_VERSION);
	put_le32(hbuf + 12, (uint32_t)hlen);
	put_le32(hbuf + 16, rr_crc32c(0, hbuf + RR_FILE_HDR_LEN, hlen));
	put_le32(hbuf + 20, 0);

	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rr_set_error(err, 0, "open %s: %s", path, strerror(errno));
		goto fail;
	}
	if (write_all(w->fd, hbuf, RR_FILE_HDR_LEN + hlen)) {
		rr_set_error(err, 0, "write header to %s: %s", path,
			     strerror(errno));
		goto fail;
	}
	w->file_off = RR_FILE_HDR_LEN + hlen;
	free(hbuf);
	return w;
fail:
	free(hbuf);
	if (w->fd >= 0)
		close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	free(w->raw);
	free(w->spare);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->io_lock);
	free(w);
	return NULL;
}

int rr_writer_append_idx(rr_writer *w, const Rr__Event *ev, uint64_t *index,
			 rr_error *err)
{
	uint8_t stack[STACK_PACK_BYTES];
	uint8_t *buf = stack, *rec;
	size_t cap = sizeof(stack), len, n;
	int ret = 0;

	/*
	 * Encode at buf+5 and put the length varint (<= 5 bytes) just before
	 * it, so the record is built in one pass without knowing its size.
	 */
	size_t bound = rr_event_encode_bound(ev);
	if (bound + 5 > cap) {
		if (bound > RR_MAX_CHUNK_RAW)
			goto too_big;
		buf = malloc(cap = bound + 5);
		if (!buf)
			goto oom;
	}
	len = rr_event_encode(ev, buf + 5);
	if (len == 0) {
		/* Not for the fast codec (or empty): protobuf-c packs it. */
		len = rr__event__get_packed_size(ev);
		if (len > RR_MAX_CHUNK_RAW - 16)
			goto too_big;
		if (len + 5 > cap) {
			if (buf != stack)
				free(buf);
			buf = malloc(cap = len + 5);
			if (!buf)
				goto oom;
		}
		rr__event__pack(ev, buf + 5);
	}
	if (len > RR_MAX_CHUNK_RAW - 16)
		goto too_big;
	{
		uint8_t lv[10];
		size_t k = rr_varint_encode(lv, len);
		rec = buf + 5 - k;
		memcpy(rec, lv, k);
		n = k + len;
	}

	pthread_mutex_lock(&w->lock);
	if (atomic_load(&w->failed)) {
		pthread_mutex_unlock(&w->lock);
		ret = failed_error(w, err);
		goto out;
	}
	/* A big record that would overflow the chunk starts a new one. */
	if (w->chunk_count && w->raw_len + n > w->chunk_raw_bytes) {
		if ((ret = flush_unlock(w, err)))
			goto out;
		pthread_mutex_lock(&w->lock);
	}
	if (grow(&w->raw, &w->raw_cap, w->raw_len + n)) {
		pthread_mutex_unlock(&w->lock);
		rr_set_error(err, w->file_off, "out of memory");
		ret = -1;
		goto out;
	}
	memcpy(w->raw + w->raw_len, rec, n);
	w->raw_len += n;
	if (w->chunk_count++ == 0) {
		w->chunk_born_ns = mono_ns();
		w->since_clock = 0;
	}
	if (index)
		*index = w->n_events;
	w->n_events++;

	if (w->raw_len >= w->chunk_raw_bytes) {
		ret = flush_unlock(w, err);
	} else if (++w->since_clock >= CLOCK_CHECK_EVERY &&
		   mono_ns() - w->chunk_born_ns >= w->flush_ms * 1000000ull) {
		w->since_clock = 0;
		ret = flush_unlock(w, err);
	} else {
		if (w->since_clock >= CLOCK_CHECK_EVERY)
			w->since_clock = 0;
		pthread_mutex_unlock(&w->lock);
	}
out:
	if (buf != stack)
		free(buf);
	return ret;
too_big:
	if (buf != stack)
		free(buf);
	rr_set_error(err, w->file_off, "event too large for a chunk (limit "
		     "%u bytes)", RR_MAX_CHUNK_RAW - 16);
	return -1;
oom:
	rr_set_error(err, w->file_off, "out of memory");
	return -1;
}

int rr_writer_append(rr_writer *w, const Rr__Event *ev, rr_error *err)
{
	return rr_writer_append_idx(w, ev, NULL, err);
}

int rr_writer_flush(rr_writer *w, rr_error *err)
{
	pthread_mutex_lock(&w->lock);
	return flush_unlock(w, err);
}

uint64_t rr_writer_count(rr_writer *w)
{
	pthread_mutex_lock(&w->lock);
	uint64_t n = w->n_events;
	pthread_mutex_unlock(&w->lock);
	return n;
}

/* Index chunk (stored, not compressed) followed by the footer. */
static int write_trailer(rr_writer *w, rr_error *err)
{
	size_t plen = w->n_index * RR_INDEX_ENTRY_LEN;
	if (plen > RR_MAX_CHUNK_RAW) {
		errno = EFBIG;
		return fail(w, err, "index too large");
	}
	if (grow(&w->out, &w->out_cap,
		 RR_CHUNK_HDR_LEN + plen + RR_FOOTER_LEN))
		return fail(w, err, "out of memory for index");

	uint8_t *p = w->out + RR_CHUNK_HDR_LEN;
	for (size_t i = 0; i < w->n_index; i++, p += RR_INDEX_ENTRY_LEN) {
		put_le64(p, w->index[i].offset);
		put_le64(p + 8, w->index[i].first_index);
		put_le32(p + 16, w->index[i].count);
		put_le32(p + 20, w->index[i].raw_len);
	}
	struct rr_chunk_hdr h = {
		.kind = RR_CHUNK_INDEX,
		.first_index = w->n_events,
		.count = (uint32_t)w->n_index,
		.raw_len = (uint32_t)plen,
		.comp_len = (uint32_t)plen,
		.payload_crc = rr_crc32c(0, w->out + RR_CHUNK_HDR_LEN, plen),
	};
	rr_chunk_hdr_encode(w->out, &h);

	uint8_t *f = p;
	put_le32(f, RR_FOOTER_MAGIC);
	put_le32(f + 4, RR_FORMAT_VERSION);
	put_le64(f + 8, w->file_off);
	put_le64(f + 16, w->n_events);
	put_le32(f + 24, (uint32_t)w->n_index);
	put_le32(f + 28, rr_crc32c(0, f, 28));

	if (write_all(w->fd, w->out, RR_CHUNK_HDR_LEN + plen + RR_FOOTER_LEN))
		return fail(w, err, "write index/footer");
	w->file_off += RR_CHUNK_HDR_LEN + plen + RR_FOOTER_LEN;
	if (fdatasync(w->fd) && errno != EINVAL && errno != EROFS)
		return fail(w, err, "fdatasync");
	return 0;
}

int rr_writer_close(rr_writer *w, rr_error *err)
{
	int ret;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	ret = flush_unlock(w, err);
	pthread_mutex_lock(&w->io_lock);
	if (!ret)
		ret = write_trailer(w, err);
	if (close(w->fd) && !ret)
		ret = fail(w, err, "close");
	pthread_mutex_unlock(&w->io_lock);

	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->io_lock);
	ZSTD_freeCCtx(w->cctx);
	free(w->raw);
	free(w->spare);
	free(w->out);
	free(w->index);
	free(w);
	return ret;
}
