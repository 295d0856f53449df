/* Error reporting and the chunk header codec, shared by writer and reader. */
#include <stdio.h>

#include "format.h"

void rr_set_error(rr_error *err, uint64_t offset, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	err->offset = offset;
	/* The offset is part of the text so a bare "%s" of msg says it all. */
	snprintf(err->msg, sizeof(err->msg), "at byte %llu: %s",
		 (unsigned long long)offset, what);
}

/*
 * Layout (little-endian):
 *   0 magic  4 kind  8 first_index(u64)  16 count  20 raw_len  24 comp_len
 *  28 payload_crc  32 hdr_crc (CRC32C of bytes 0..31)  36 reserved (0)
 */
void rr_chunk_hdr_encode(uint8_t out[RR_CHUNK_HDR_LEN],
			 const struct rr_chunk_hdr *h)
{
	put_le32(out + 0, RR_CHUNK_MAGIC);
	put_le32(out + 4, h->kind);
	put_le64(out + 8, h->first_index);
	put_le32(out + 16, h->count);
	put_le32(out + 20, h->raw_len);
	put_le32(out + 24, h->comp_len);
	put_le32(out + 28, h->payload_crc);
	put_le32(out + 32, rr_crc32c(0, out, 32));
	put_le32(out + 36, 0);
}

void rr_chunk_hdr_decode(const uint8_t in[RR_CHUNK_HDR_LEN],
			 struct rr_chunk_hdr *h)
{
	h->magic = get_le32(in + 0);
	h->kind = get_le32(in + 4);
	h->first_index = get_le64(in + 8);
	h->count = get_le32(in + 16);
	h->raw_len = get_le32(in + 20);
	h->comp_len = get_le32(in + 24);
	h->payload_crc = get_le32(in + 28);
	h->hdr_crc = get_le32(in + 32);
}
