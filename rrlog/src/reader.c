/*
 * run.rr reader.
 *
 * Treats the file as hostile: every length, count, offset and varint is
 * checked against the file size and the caps in rrlog.h before it is used
 * to read or allocate, and every error names the byte offset.
 *
 * Memory stays flat whatever the log size: one compressed and one raw
 * buffer (each at most one chunk), the arena for the current event, and
 * the chunk list (24 bytes per chunk).
 *
 * Two ways to find chunks:
 *  - footer mode: the footer points at the index chunk, which lists every
 *    chunk; the list is validated once at open;
 *  - scan mode (no footer: crashed recording): chunk headers are walked
 *    from the start, lazily, and the first incomplete chunk marks the end
 *    of the readable prefix ("truncated at byte N").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "arena.h"
#include "codec.h"
#include "format.h"

/*
 * Fuzzing builds skip checksum mismatches so the fuzzer can reach the
 * decompressor and record parser; everything else is checked as usual.
 */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CRC_BAD(a, b) ((void)(a), (void)(b), 0)
#else
#define CRC_BAD(a, b) ((a) != (b))
#endif

struct rr_reader {
	int fd;                     /* -1 when reading from memory */
	const uint8_t *mem;
	uint64_t size;

	Rr__Header *hdr;
	uint64_t data_off;          /* first chunk */
	uint64_t data_end;          /* index chunk offset, or file size */

	rr_chunk_info *chunks;
	size_t n_chunks, chunks_cap;
	int chunks_complete;        /* list covers the whole log */
	int has_footer;
	uint64_t scan_off;          /* scan mode: next header to look at */
	uint64_t scan_next_index;   /* scan mode: expected first_index */

	int64_t truncated;
	char warning[256];

	/* read position */
	size_t next_chunk;          /* chunk to load when this one runs out */
	size_t loaded;              /* chunk whose payload is in raw, or -1 */
	uint32_t left;              /* records not yet returned from it */
	size_t raw_pos;
	uint64_t next_index;

	uint8_t *raw;
	size_t raw_cap;
	uint32_t raw_len;
	uint8_t *comp;
	size_t comp_cap;
	ZSTD_DCtx *dctx;
	struct rr_arena arena;
	Rr__Event *ref_ev;          /* last event from next_ref, in arena */
};

#define NO_CHUNK ((size_t)-1)

/* ---- byte source ------------------------------------------------------ */

/*
 * Return a pointer to [off, off+len) of the file: into the mapped buffer
 * for memory readers, otherwise into *buf (grown as needed) after pread.
 */
static const uint8_t *src_get(rr_reader *r, uint64_t off, size_t len,
			      uint8_t **buf, size_t *cap, rr_error *err)
{
	if (off > r->size || len > r->size - off) {
		rr_set_error(err, off, "read of %zu bytes past end of file "
			     "(size %llu)", len, (unsigned long long)r->size);
		return NULL;
	}
	if (r->mem)
		return r->mem + off;
	if (len == 0)
		return (const uint8_t *)"";  /* *buf may still be NULL */
	if (len > *cap) {
		uint8_t *p = realloc(*buf, len);
		if (!p) {
			rr_set_error(err, off, "out of memory (%zu bytes)", len);
			return NULL;
		}
		*buf = p;
		*cap = len;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(r->fd, *buf + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rr_set_error(err, off + done, "read: %s",
				     n < 0 ? strerror(errno) : "unexpected EOF");
			return NULL;
		}
		done += n;
	}
	return *buf;
}

/* Small reads (headers, footer) into a caller array. */
static int src_copy(rr_reader *r, uint64_t off, void *dst, size_t len,
		    rr_error *err)
{
	uint8_t *tmp = NULL;
	size_t cap = 0;
	const uint8_t *p = src_get(r, off, len, &tmp, &cap, err);
	if (p)
		memcpy(dst, p, len);
	free(tmp);
	return p ? 0 : -1;
}

/* ---- chunk list ------------------------------------------------------- */

static int chunks_push(rr_reader *r, const rr_chunk_info *c, rr_error *err)
{
	if (r->n_chunks == r->chunks_cap) {
		size_t n = r->chunks_cap ? r->chunks_cap * 2 : 64;
		rr_chunk_info *p = realloc(r->chunks, n * sizeof(*p));
		if (!p) {
			rr_set_error(err, c->offset, "out of memory");
			return -1;
		}
		r->chunks = p;
		r->chunks_cap = n;
	}
	r->chunks[r->n_chunks++] = *c;
	return 0;
}

static void set_truncated(rr_reader *r, uint64_t off, const char *why)
{
	r->truncated = (int64_t)off;
	r->chunks_complete = 1;
	snprintf(r->warning, sizeof(r->warning),
		 "truncated at byte %llu: %s; the %llu events before it are "
		 "complete", (unsigned long long)off, why,
		 (unsigned long long)r->scan_next_index);
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/*
 * Check a decoded chunk header for self-consistency.  Does not look at
 * the payload.  Returns 0 or -1 with err.
 */
static int check_chunk_hdr(const uint8_t raw[RR_CHUNK_HDR_LEN],
			   const struct rr_chunk_hdr *h, uint64_t off,
			   rr_error *err)
{
	if (h->magic != RR_CHUNK_MAGIC) {
		rr_set_error(err, off, "bad chunk magic 0x%08x", h->magic);
		return -1;
	}
	if (CRC_BAD(rr_crc32c(0, raw, 32), h->hdr_crc)) {
		rr_set_error(err, off, "chunk header checksum mismatch");
		return -1;
	}
	if (h->kind == RR_CHUNK_EVENTS) {
		if (h->raw_len > RR_MAX_CHUNK_RAW) {
			rr_set_error(err, off, "chunk raw length %u exceeds "
				     "limit %u", h->raw_len, RR_MAX_CHUNK_RAW);
			return -1;
		}
		if (h->comp_len > RR_MAX_CHUNK_COMP || h->comp_len == 0) {
			rr_set_error(err, off, "bad chunk compressed length %u",
				     h->comp_len);
			return -1;
		}
		/* Every record takes at least one byte (its length). */
		if (h->count == 0 || h->count > h->raw_len) {
			rr_set_error(err, off, "bad chunk event count %u for "
				     "%u raw bytes", h->count, h->raw_len);
			return -1;
		}
	} else if (h->kind != RR_CHUNK_INDEX) {
		rr_set_error(err, off, "unknown chunk kind %u", h->kind);
		return -1;
	}
	return 0;
}

/*
 * Scan mode: look at the chunk header at scan_off and append it to the
 * list, or decide the log ends there.  Returns 1 if a chunk was added, 0
 * at the end (chunks_complete set, maybe truncated), -1 on corruption.
 */
static int scan_one(rr_reader *r, rr_error *err)
{
	uint64_t off = r->scan_off;
	uint8_t raw[RR_CHUNK_HDR_LEN];
	struct rr_chunk_hdr h;

	if (r->chunks_complete)
		return 0;
	if (off == r->size) {
		set_truncated(r, off, "no index/footer (recording did not "
			      "close cleanly)");
		return 0;
	}
	if (r->size - off < RR_CHUNK_HDR_LEN) {
		set_truncated(r, off, "incomplete chunk header");
		return 0;
	}
	if (src_copy(r, off, raw, sizeof(raw), err))
		return -1;
	/* A crash can leave a zero-filled tail (file size updated first). */
	if (all_zero(raw, sizeof(raw))) {
		set_truncated(r, off, "zero-filled tail");
		return 0;
	}
	rr_chunk_hdr_decode(raw, &h);
	if (check_chunk_hdr(raw, &h, off, err))
		return -1;
	if (h.kind == RR_CHUNK_INDEX) {
		/* A whole footer's worth of bytes after it: footer damaged. */
		if (h.comp_len <= r->size - off - RR_CHUNK_HDR_LEN &&
		    r->size - off - RR_CHUNK_HDR_LEN - h.comp_len ==
		    RR_FOOTER_LEN) {
			rr_set_error(err, r->size - RR_FOOTER_LEN,
				     "damaged footer after the index chunk "
				     "(bad magic or checksum)");
			return -1;
		}
		/* Index written but the footer is not: closing was cut off. */
		set_truncated(r, off, "index chunk without a valid footer");
		return 0;
	}
	if (h.first_index != r->scan_next_index) {
		rr_set_error(err, off, "chunk first event index %llu, expected "
			     "%llu", (unsigned long long)h.first_index,
			     (unsigned long long)r->scan_next_index);
		return -1;
	}
	if (h.comp_len > r->size - off - RR_CHUNK_HDR_LEN) {
		set_truncated(r, off, "incomplete chunk payload");
		return 0;
	}
	rr_chunk_info c = {
		.offset = off, .first_index = h.first_index, .count = h.count,
		.raw_len = h.raw_len, .comp_len = h.comp_len,
	};
	if (chunks_push(r, &c, err))
		return -1;
	r->scan_off = off + RR_CHUNK_HDR_LEN + h.comp_len;
	r->scan_next_index += h.count;
	return 1;
}

/* Footer mode: load and validate the index chunk.  0 ok, -1 corrupt. */
static int load_index(rr_reader *r, uint64_t index_off, uint64_t n_events,
		      uint32_t n_chunks, rr_error *err)
{
	uint64_t footer_off = r->size - RR_FOOTER_LEN;
	uint8_t raw[RR_CHUNK_HDR_LEN];
	struct rr_chunk_hdr h;

	if (index_off < r->data_off || index_off > footer_off ||
	    footer_off - index_off < RR_CHUNK_HDR_LEN) {
		rr_set_error(err, footer_off, "footer index offset %llu outside "
			     "[%llu, %llu]", (unsigned long long)index_off,
			     (unsigned long long)r->data_off,
			     (unsigned long long)footer_off);
		return -1;
	}
	if (src_copy(r, index_off, raw, sizeof(raw), err))
		return -1;
	rr_chunk_hdr_decode(raw, &h);
	if (check_chunk_hdr(raw, &h, index_off, err))
		return -1;
	if (h.kind != RR_CHUNK_INDEX) {
		rr_set_error(err, index_off, "footer points at a chunk of kind "
			     "%u, not the index", h.kind);
		return -1;
	}
	uint64_t plen = (uint64_t)h.count * RR_INDEX_ENTRY_LEN;
	if (h.count != n_chunks || h.raw_len != plen || h.comp_len != plen ||
	    index_off + RR_CHUNK_HDR_LEN + plen != footer_off ||
	    h.first_index != n_events) {
		rr_set_error(err, index_off, "index chunk (%u entries, %u "
			     "bytes) disagrees with footer (%u chunks, %llu "
			     "events)", h.count, h.raw_len, n_chunks,
			     (unsigned long long)n_events);
		return -1;
	}

	uint8_t *buf = NULL;
	size_t cap = 0;
	const uint8_t *p = src_get(r, index_off + RR_CHUNK_HDR_LEN, plen,
				   &buf, &cap, err);
	if (!p)
		return -1;
	if (CRC_BAD(rr_crc32c(0, p, plen), h.payload_crc)) {
		rr_set_error(err, index_off, "index chunk checksum mismatch");
		free(buf);
		return -1;
	}

	uint64_t expect_off = r->data_off, expect_idx = 0;
	for (uint32_t i = 0; i < h.count; i++, p += RR_INDEX_ENTRY_LEN) {
		uint64_t eoff = index_off + RR_CHUNK_HDR_LEN +
				(uint64_t)i * RR_INDEX_ENTRY_LEN;
		rr_chunk_info c = {
			.offset = get_le64(p), .first_index = get_le64(p + 8),
			.count = get_le32(p + 16), .raw_len = get_le32(p + 20),
		};
		/*
		 * Chunks are contiguous, so each one's compressed length is
		 * the gap to the next; this ties the index to the file.
		 */
		uint64_t next = i + 1 < h.count ? get_le64(p + 24) : index_off;
		if (c.offset != expect_off || next <= c.offset ||
		    next - c.offset <= RR_CHUNK_HDR_LEN ||
		    next - c.offset - RR_CHUNK_HDR_LEN > RR_MAX_CHUNK_COMP ||
		    next > index_off) {
			rr_set_error(err, eoff, "index entry %u: chunk offset "
				     "%llu inconsistent (expected %llu)", i,
				     (unsigned long long)c.offset,
				     (unsigned long long)expect_off);
			goto bad;
		}
		if (c.first_index != expect_idx || c.count == 0 ||
		    c.raw_len > RR_MAX_CHUNK_RAW || c.count > c.raw_len) {
			rr_set_error(err, eoff, "index entry %u: bad event range "
				     "(first %llu, count %u, raw %u)", i,
				     (unsigned long long)c.first_index, c.count,
				     c.raw_len);
			goto bad;
		}
		c.comp_len = (uint32_t)(next - c.offset - RR_CHUNK_HDR_LEN);
		if (chunks_push(r, &c, err))
			goto bad;
		expect_off = next;
		expect_idx += c.count;
	}
	if (expect_off != index_off || expect_idx != n_events) {
		rr_set_error(err, index_off, "index covers %llu events up to "
			     "byte %llu, footer says %llu events",
			     (unsigned long long)expect_idx,
			     (unsigned long long)expect_off,
			     (unsigned long long)n_events);
		goto bad;
	}
	free(buf);
	r->chunks_complete = 1;
	r->has_footer = 1;
	r->data_end = index_off;
	return 0;
bad:
	free(buf);
	r->n_chunks = 0;
	return -1;
}

/* ---- open ------------------------------------------------------------- */

static int open_common(rr_reader *r, rr_error *err)
{
	uint8_t fh[RR_FILE_HDR_LEN];

	r->truncated = -1;
	r->loaded = NO_CHUNK;
	rr_arena_init(&r->arena);
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx) {
		rr_set_error(err, 0, "out of memory");
		return -1;
	}

	if (r->size < RR_FILE_HDR_LEN) {
		rr_set_error(err, r->size, "file too short for a run.rr header "
			     "(%llu bytes)", (unsigned long long)r->size);
		return -1;
	}
	if (src_copy(r, 0, fh, sizeof(fh), err))
		return -1;
	if (memcmp(fh, RR_FILE_MAGIC, RR_FILE_MAGIC_LEN)) {
		rr_set_error(err, 0, "not a run.rr file (bad magic)");
		return -1;
	}
	uint32_t version = get_le32(fh + 8);
	if (version == 0 || version > RR_FORMAT_VERSION) {
		rr_set_error(err, 8, "unsupported format version %u (this "
			     "reader knows 1..%u)", version, RR_FORMAT_VERSION);
		return -1;
	}
	uint32_t hlen = get_le32(fh + 12);
	if (hlen > RR_MAX_HEADER_LEN) {
		rr_set_error(err, 12, "header length %u exceeds limit %u", hlen,
			     RR_MAX_HEADER_LEN);
		return -1;
	}
	if (hlen > r->size - RR_FILE_HDR_LEN) {
		rr_set_error(err, r->size, "truncated inside the header record "
			     "(needs %u bytes)", hlen);
		return -1;
	}
	uint8_t *buf = NULL;
	size_t cap = 0;
	const uint8_t *hp = src_get(r, RR_FILE_HDR_LEN, hlen, &buf, &cap, err);
	if (!hp)
		return -1;
	if (CRC_BAD(rr_crc32c(0, hp, hlen), get_le32(fh + 16))) {
		rr_set_error(err, 16, "header record checksum mismatch");
		free(buf);
		return -1;
	}
	r->hdr = rr__header__unpack(NULL, hlen, hp);
	free(buf);
	if (!r->hdr) {
		rr_set_error(err, RR_FILE_HDR_LEN, "header record does not "
			     "decode");
		return -1;
	}
	if (r->hdr->format_version != version) {
		rr_set_error(err, RR_FILE_HDR_LEN, "header format_version %u "
			     "differs from file version %u",
			     r->hdr->format_version, version);
		return -1;
	}
	r->data_off = RR_FILE_HDR_LEN + (uint64_t)hlen;
	r->data_end = r->size;
	r->scan_off = r->data_off;

	/* Footer: present and valid -> footer mode; absent -> scan mode. */
	if (r->size - r->data_off >= RR_CHUNK_HDR_LEN + RR_FOOTER_LEN) {
		uint8_t f[RR_FOOTER_LEN];
		uint64_t foff = r->size - RR_FOOTER_LEN;
		if (src_copy(r, foff, f, sizeof(f), err))
			return -1;
		/*
		 * Magic and CRC both right: footer mode.  A bad CRC is either
		 * a damaged footer or compressed bytes of a crashed log that
		 * happen to look like the magic; scan mode tells them apart
		 * (an index chunk followed by exactly a footer's worth of
		 * bytes is a damaged footer: error).
		 */
		if (get_le32(f) == RR_FOOTER_MAGIC &&
		    !CRC_BAD(rr_crc32c(0, f, 28), get_le32(f + 28))) {
			if (get_le32(f + 4) != version) {
				rr_set_error(err, foff + 4, "footer version %u "
					     "differs from file version %u",
					     get_le32(f + 4), version);
				return -1;
			}
			if (load_index(r, get_le64(f + 8), get_le64(f + 16),
				       get_le32(f + 24), err))
				return -1;
		}
	}
	return 0;
}

rr_reader *rr_reader_open(const char *path, rr_error *err)
{
	struct stat st;
	rr_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		rr_set_error(err, 0, "out of memory");
		return NULL;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		rr_set_error(err, 0, "open %s: %s", path, strerror(errno));
		free(r);
		return NULL;
	}
	if (fstat(r->fd, &st) || !S_ISREG(st.st_mode)) {
		rr_set_error(err, 0, "%s: not a regular file", path);
		close(r->fd);
		free(r);
		return NULL;
	}
	r->size = st.st_size;
	posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (open_common(r, err)) {
		rr_reader_close(r);
		return NULL;
	}
	return r;
}

rr_reader *rr_reader_open_mem(const void *buf, size_t len, rr_error *err)
{
	rr_reader *r = calloc(1, sizeof(*r));

	if (!r) {
		rr_set_error(err, 0, "out of memory");
		return NULL;
	}
	r->fd = -1;
	r->mem = buf ? buf : (const uint8_t *)"";
	r->size = len;
	if (open_common(r, err)) {
		rr_reader_close(r);
		return NULL;
	}
	return r;
}

void rr_reader_close(rr_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	if (r->hdr)
		rr__header__free_unpacked(r->hdr, NULL);
	ZSTD_freeDCtx(r->dctx);
	rr_arena_destroy(&r->arena);
	free(r->chunks);
	free(r->raw);
	free(r->comp);
	free(r);
}

/* ---- chunk payloads --------------------------------------------------- */

/* Make chunks[i] exist in the list (scanning if needed).  1 yes, 0 no. */
static int have_chunk(rr_reader *r, size_t i, rr_error *err)
{
	while (i >= r->n_chunks) {
		int s = scan_one(r, err);
		if (s <= 0)
			return s;
	}
	return 1;
}

/* Verify and decompress chunks[i] into r->raw. */
static int load_chunk(rr_reader *r, size_t i, rr_error *err)
{
	const rr_chunk_info *c = &r->chunks[i];
	uint8_t hraw[RR_CHUNK_HDR_LEN];
	struct rr_chunk_hdr h;

	r->loaded = NO_CHUNK;
	r->left = 0;
	if (src_copy(r, c->offset, hraw, sizeof(hraw), err))
		return -1;
	rr_chunk_hdr_decode(hraw, &h);
	if (check_chunk_hdr(hraw, &h, c->offset, err))
		return -1;
	if (h.kind != RR_CHUNK_EVENTS || h.first_index != c->first_index ||
	    h.count != c->count || h.raw_len != c->raw_len ||
	    h.comp_len != c->comp_len) {
		rr_set_error(err, c->offset, "chunk header (kind %u, first %llu, "
			     "count %u, raw %u, comp %u) disagrees with the "
			     "index", h.kind, (unsigned long long)h.first_index,
			     h.count, h.raw_len, h.comp_len);
		return -1;
	}
	uint64_t poff = c->offset + RR_CHUNK_HDR_LEN;
	const uint8_t *comp = src_get(r, poff, h.comp_len, &r->comp,
				      &r->comp_cap, err);
	if (!comp)
		return -1;
	if (CRC_BAD(rr_crc32c(0, comp, h.comp_len), h.payload_crc)) {
		rr_set_error(err, poff, "chunk payload checksum mismatch "
			     "(chunk at byte %llu)",
			     (unsigned long long)c->offset);
		return -1;
	}
	/* Refuse a frame that says it is another size before allocating. */
	unsigned long long fcs = ZSTD_getFrameContentSize(comp, h.comp_len);
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != h.raw_len) {
		rr_set_error(err, poff, "zstd frame %s (content size %llu, "
			     "chunk header says %u)",
			     fcs == ZSTD_CONTENTSIZE_ERROR ? "is invalid" :
			     "has the wrong size",
			     fcs == ZSTD_CONTENTSIZE_ERROR ? 0ull : fcs,
			     h.raw_len);
		return -1;
	}
	if (h.raw_len > r->raw_cap) {
		uint8_t *p = realloc(r->raw, h.raw_len);
		if (!p) {
			rr_set_error(err, c->offset, "out of memory");
			return -1;
		}
		r->raw = p;
		r->raw_cap = h.raw_len;
	}
	/* The output buffer is exactly raw_len: zstd cannot write past it. */
	size_t n = ZSTD_decompressDCtx(r->dctx, r->raw, h.raw_len, comp,
				       h.comp_len);
	if (ZSTD_isError(n)) {
		rr_set_error(err, poff, "zstd: %s", ZSTD_getErrorName(n));
		return -1;
	}
	if (n != h.raw_len) {
		rr_set_error(err, poff, "chunk decompressed to %zu bytes, "
			     "header says %u", n, h.raw_len);
		return -1;
	}
	r->loaded = i;
	r->left = h.count;
	r->raw_len = h.raw_len;
	r->raw_pos = 0;
	return 0;
}

/*
 * Find the next record in the loaded chunk (loading the next chunk when
 * needed).  Returns 1 with rec and len set, 0 at the end, -1 on error.
 */
static int next_record(rr_reader *r, const uint8_t **rec, size_t *len,
		       rr_error *err)
{
	while (r->left == 0) {
		int s = have_chunk(r, r->next_chunk, err);
		if (s <= 0)
			return s;
		if (load_chunk(r, r->next_chunk, err))
			return -1;
		r->next_chunk++;
	}
	const rr_chunk_info *c = &r->chunks[r->loaded];
	const uint8_t *p = r->raw + r->raw_pos, *end = r->raw + r->raw_len;
	uint64_t n;
	size_t vl = rr_varint_decode(p, end, &n);
	if (vl == 0 || n > (uint64_t)(end - p) - vl) {
		rr_set_error(err, c->offset, "event %llu: bad record length at "
			     "raw offset %zu of chunk",
			     (unsigned long long)r->next_index, r->raw_pos);
		return -1;
	}
	*rec = p + vl;
	*len = n;
	r->raw_pos += vl + n;
	r->left--;
	r->next_index++;
	if (r->left == 0 && r->raw_pos != r->raw_len) {
		rr_set_error(err, c->offset, "chunk has %zu bytes after its "
			     "last event", r->raw_len - r->raw_pos);
		return -1;
	}
	return 1;
}

int rr_reader_next(rr_reader *r, Rr__Event **ev, rr_error *err)
{
	const uint8_t *rec;
	size_t len;
	uint64_t idx = r->next_index;
	int s = next_record(r, &rec, &len, err);

	*ev = NULL;
	if (s <= 0)
		return s;
	*ev = rr__event__unpack(NULL, len, rec);
	if (!*ev) {
		rr_set_error(err, r->chunks[r->loaded].offset, "event %llu: "
			     "record does not decode (raw offset %zu of chunk)",
			     (unsigned long long)idx, r->raw_pos - len);
		return -1;
	}
	return 1;
}

int rr_reader_next_ref(rr_reader *r, const Rr__Event **ev, rr_error *err)
{
	const uint8_t *rec;
	size_t len;
	uint64_t idx = r->next_index;
	int s;

	*ev = NULL;
	rr_arena_reset(&r->arena);
	s = next_record(r, &rec, &len, err);
	if (s <= 0)
		return s;
	/* Fast decoder for canonical records, protobuf-c for the rest. */
	Rr__Event *e;
	if (rr_event_decode_fast(rec, len, &r->arena.pbc, &e) != RR_DEC_OK)
		e = rr__event__unpack(&r->arena.pbc, len, rec);
	if (!e) {
		rr_set_error(err, r->chunks[r->loaded].offset, "event %llu: "
			     "record does not decode (raw offset %zu of chunk)",
			     (unsigned long long)idx, r->raw_pos - len);
		return -1;
	}
	*ev = e;
	return 1;
}

/* ---- random access ---------------------------------------------------- */

static int scan_all(rr_reader *r, rr_error *err)
{
	int s;
	while ((s = scan_one(r, err)) > 0)
		;
	return s;
}

int64_t rr_reader_count(rr_reader *r, rr_error *err)
{
	if (scan_all(r, err) < 0)
		return -1;
	if (r->n_chunks == 0)
		return 0;
	const rr_chunk_info *c = &r->chunks[r->n_chunks - 1];
	return (int64_t)(c->first_index + c->count);
}

int rr_reader_seek(rr_reader *r, uint64_t index, rr_error *err)
{
	/* Make sure the list reaches index, scanning headers if needed. */
	for (;;) {
		if (r->n_chunks) {
			const rr_chunk_info *l = &r->chunks[r->n_chunks - 1];
			if (index < l->first_index + l->count)
				break;
		}
		int s = scan_one(r, err);
		if (s < 0)
			return -1;
		if (s == 0)
			break;
	}
	uint64_t total = 0;
	if (r->n_chunks)
		total = r->chunks[r->n_chunks - 1].first_index +
			r->chunks[r->n_chunks - 1].count;
	if (index >= total) {
		if (index > total) {
			rr_set_error(err, r->data_end, "seek to event %llu past "
				     "the end (%llu events)",
				     (unsigned long long)index,
				     (unsigned long long)total);
			return -1;
		}
		r->next_chunk = r->n_chunks;
		r->left = 0;
		r->loaded = NO_CHUNK;
		r->next_index = total;
		return 0;
	}
	/* Binary search: last chunk with first_index <= index. */
	size_t lo = 0, hi = r->n_chunks;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->chunks[mid].first_index <= index)
			lo = mid;
		else
			hi = mid;
	}
	if (r->loaded != lo || r->next_index > index ||
	    r->next_index < r->chunks[lo].first_index) {
		if (load_chunk(r, lo, err))
			return -1;
		r->next_chunk = lo + 1;
		r->next_index = r->chunks[lo].first_index;
	}
	/* Skip records by their lengths only: no decoding. */
	while (r->next_index < index) {
		const uint8_t *rec;
		size_t len;
		if (next_record(r, &rec, &len, err) <= 0)
			return -1;
	}
	return 0;
}

uint64_t rr_reader_index(rr_reader *r)
{
	return r->next_index;
}

/* ---- accessors -------------------------------------------------------- */

const Rr__Header *rr_reader_header(rr_reader *r)
{
	return r->hdr;
}

int64_t rr_reader_truncated(rr_reader *r)
{
	return r->truncated;
}

const char *rr_reader_warning(rr_reader *r)
{
	return r->truncated >= 0 ? r->warning : NULL;
}

int rr_reader_has_footer(rr_reader *r)
{
	return r->has_footer;
}

uint64_t rr_reader_data_offset(rr_reader *r)
{
	return r->data_off;
}

uint64_t rr_reader_file_size(rr_reader *r)
{
	return r->size;
}

int64_t rr_reader_chunks(rr_reader *r, const rr_chunk_info **chunks,
			 rr_error *err)
{
	if (scan_all(r, err) < 0)
		return -1;
	*chunks = r->chunks;
	return (int64_t)r->n_chunks;
}

int rr_reader_verify(rr_reader *r, rr_error *err)
{
	uint64_t pos = r->next_index;
	const Rr__Event *ev;
	int s;

	if (scan_all(r, err) < 0)
		return -1;
	if (rr_reader_seek(r, 0, err))
		return -1;
	/* Decoding every record checks every chunk CRC, length and varint. */
	while ((s = rr_reader_next_ref(r, &ev, err)) > 0) {
		if (ev->body_case == RR__EVENT__BODY_END &&
		    ev->end->n_events != r->next_index - 1) {
			rr_set_error(err, r->chunks[r->loaded].offset,
				     "End event %llu claims %llu events before "
				     "it", (unsigned long long)r->next_index - 1,
				     (unsigned long long)ev->end->n_events);
			return -1;
		}
	}
	if (s < 0)
		return -1;
	return rr_reader_seek(r, pos, err);
}
