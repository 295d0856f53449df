/*
 * On-disk layout constants and little-endian helpers shared by the writer
 * and the reader.  FORMAT.md is the prose version of this file; keep them
 * in sync.
 */
#ifndef RRLOG_FORMAT_H
#define RRLOG_FORMAT_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "rrlog.h"

/* File header: magic[8] version u32 header_len u32 header_crc u32 rsvd u32 */
#define RR_FILE_MAGIC      "RRLOG\r\n\032"   /* \r\n and ^Z catch text-mode damage */
#define RR_FILE_MAGIC_LEN  8
#define RR_FILE_HDR_LEN    24

/* Chunk header, 40 bytes, see FORMAT.md. */
#define RR_CHUNK_MAGIC     0x4b435252u  /* "RRCK" */
#define RR_CHUNK_HDR_LEN   40
#define RR_CHUNK_EVENTS    1u  /* payload: zstd frame of varint-delimited Events */
#define RR_CHUNK_INDEX     2u  /* payload: raw array of index entries */

/* Index entry: offset u64, first_index u64, count u32, raw_len u32. */
#define RR_INDEX_ENTRY_LEN 24

/* Footer, 32 bytes at the very end of a cleanly closed file. */
#define RR_FOOTER_MAGIC    0x54465252u  /* "RRFT" */
#define RR_FOOTER_LEN      32

/* Largest compressed payload we accept: zstd's bound for the raw cap. */
#define RR_MAX_CHUNK_COMP  (RR_MAX_CHUNK_RAW + (RR_MAX_CHUNK_RAW >> 7) + 4096)

static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/* Decoded chunk header. */
struct rr_chunk_hdr {
	uint32_t magic, kind;
	uint64_t first_index;
	uint32_t count, raw_len, comp_len, payload_crc, hdr_crc;
};

void rr_chunk_hdr_encode(uint8_t out[RR_CHUNK_HDR_LEN],
			 const struct rr_chunk_hdr *h);
void rr_chunk_hdr_decode(const uint8_t in[RR_CHUNK_HDR_LEN],
			 struct rr_chunk_hdr *h);

uint32_t rr_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t rr_crc32c_sw(uint32_t crc, const void *buf, size_t len); /* tests */

/* Fill err (if non-NULL) with offset and a printf-style message. */
__attribute__((format(printf, 3, 4)))
void rr_set_error(rr_error *err, uint64_t offset, const char *fmt, ...);

/*
 * Decode a protobuf varint from [p, end).  Returns bytes consumed, or 0 if
 * it is truncated or longer than 10 bytes / overflows 64 bits.
 */
static inline size_t rr_varint_decode(const uint8_t *p, const uint8_t *end,
				      uint64_t *out)
{
	uint64_t v = 0;
	for (size_t i = 0; i < 10 && p + i < end; i++) {
		uint8_t b = p[i];
		if (i == 9 && b > 1)
			return 0;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			return i + 1;
		}
	}
	return 0;
}

static inline size_t rr_varint_encode(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

#endif /* RRLOG_FORMAT_H */
