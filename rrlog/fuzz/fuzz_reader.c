/*
 * libFuzzer target for the run.rr reader.
 *
 * The first input byte picks what the rest is:
 *  - even: a whole run.rr file, read from memory: open, header, every
 *    event through both read APIs, seeks, count and verify;
 *  - odd: the decompressed payload of one chunk.  The target wraps it in
 *    a valid file (header, zstd, checksums) so the fuzzer spends its time
 *    in the record/protobuf parsing instead of fighting zstd and CRCs.
 *    Each record is also decoded by both decoders (fast codec.c and
 *    protobuf-c): where the fast one accepts, protobuf-c must accept too
 *    and both must mean the same (identical protobuf-c repack), and the
 *    fast encoder must reproduce protobuf-c's bytes.
 * Fuzzing builds also ignore checksum mismatches (reader.c) for the same
 * reason.  Anything that crashes, leaks, hangs or trips UBSan is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "arena.h"
#include "codec.h"
#include "format.h"
#include "rrlog.h"

static void read_everything(const uint8_t *buf, size_t len)
{
	rr_error err;
	rr_reader *r = rr_reader_open_mem(buf, len, &err);
	if (!r)
		return;
	(void)rr_reader_header(r);

	const Rr__Event *ref;
	int n = 0;
	while (rr_reader_next_ref(r, &ref, &err) == 1 && n++ < 100000)
		(void)rr_event_kind_name(ref->body_case);

	int64_t count = rr_reader_count(r, &err);
	if (count > 0) {
		Rr__Event *ev;
		if (rr_reader_seek(r, (uint64_t)count / 2, &err) == 0 &&
		    rr_reader_next(r, &ev, &err) == 1)
			rr_event_free(ev);
		if (rr_reader_seek(r, 0, &err) == 0 &&
		    rr_reader_next(r, &ev, &err) == 1)
			rr_event_free(ev);
	}
	(void)rr_reader_seek(r, (uint64_t)count + 1, &err);
	(void)rr_reader_verify(r, &err);
	(void)rr_reader_warning(r);
	rr_reader_close(r);
}

/* Differential check of the two decoders on one record. */
static void cross_check(const uint8_t *rec, size_t len)
{
	struct rr_arena a;
	Rr__Event *fast = NULL;

	rr_arena_init(&a);
	if (rr_event_decode_fast(rec, len, &a.pbc, &fast) == RR_DEC_OK) {
		Rr__Event *ref = rr__event__unpack(NULL, len, rec);
		if (!ref)
			__builtin_trap();   /* fast accepted what protobuf-c refuses */
		size_t l1 = rr__event__get_packed_size(fast);
		size_t l2 = rr__event__get_packed_size(ref);
		uint8_t *b1 = malloc(l1 + 1), *b2 = malloc(l2 + 1);
		uint8_t *b3 = malloc(rr_event_encode_bound(ref) + 1);
		rr__event__pack(fast, b1);
		rr__event__pack(ref, b2);
		if (l1 != l2 || memcmp(b1, b2, l1))
			__builtin_trap();   /* the decoders disagree */
		size_t l3 = rr_event_encode(ref, b3);
		if (l3 && (l3 != l2 || memcmp(b3, b2, l2)))
			__builtin_trap();   /* fast encoder != protobuf-c */
		free(b1);
		free(b2);
		free(b3);
		rr__event__free_unpacked(ref, NULL);
	}
	rr_arena_destroy(&a);
}

/* Build header + one events chunk around raw (no footer) and read it. */
static void read_as_chunk(const uint8_t *raw, size_t len)
{
	static const uint8_t hdr_rec[] = { 0x08, 0x01 };  /* format_version 1 */
	size_t bound = ZSTD_compressBound(len);
	size_t off = RR_FILE_HDR_LEN + sizeof(hdr_rec);
	uint8_t *f = malloc(off + RR_CHUNK_HDR_LEN + bound);
	if (!f)
		return;
	memcpy(f, RR_FILE_MAGIC, RR_FILE_MAGIC_LEN);
	put_le32(f + 8, RR_FORMAT_VERSION);
	put_le32(f + 12, sizeof(hdr_rec));
	put_le32(f + 16, rr_crc32c(0, hdr_rec, sizeof(hdr_rec)));
	put_le32(f + 20, 0);
	memcpy(f + RR_FILE_HDR_LEN, hdr_rec, sizeof(hdr_rec));

	size_t clen = ZSTD_compress(f + off + RR_CHUNK_HDR_LEN, bound, raw, len,
				    1);
	if (!ZSTD_isError(clen)) {
		/* Count records the way a writer would have. */
		uint32_t count = 0;
		const uint8_t *p = raw, *end = raw + len;
		uint64_t n;
		size_t vl;
		while (p < end && (vl = rr_varint_decode(p, end, &n)) &&
		       n <= (uint64_t)(end - p) - vl) {
			cross_check(p + vl, n);
			p += vl + n;
			count++;
		}
		if (count == 0)
			count = 1;  /* let the reader find the damage */
		struct rr_chunk_hdr h = {
			.kind = RR_CHUNK_EVENTS, .first_index = 0,
			.count = count, .raw_len = (uint32_t)len,
			.comp_len = (uint32_t)clen,
			.payload_crc = rr_crc32c(0, f + off + RR_CHUNK_HDR_LEN,
						 clen),
		};
		rr_chunk_hdr_encode(f + off, &h);
		read_everything(f, off + RR_CHUNK_HDR_LEN + clen);
	}
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		read_as_chunk(data + 1, size - 1);
	else
		read_everything(data + 1, size - 1);
	return 0;
}
