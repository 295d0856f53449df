/*
 * CRC32C (Castagnoli), the checksum of chunk payloads and headers.
 * Chosen over zlib's CRC32 because x86 has an instruction for it (SSE4.2),
 * which makes checksumming cost nothing next to zstd; the table version is
 * the portable fallback and the reference for tests.
 */
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#include "format.h"

#define CRC32C_POLY 0x82f63b78u  /* reflected Castagnoli polynomial */

static uint32_t crc_table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
				crc_table[0][crc_table[t - 1][i] & 0xff];
}

/* Slicing-by-8: portable, ~1-2 GB/s. */
static uint32_t crc32c_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	pthread_once(&table_once, table_init);
	while (len && ((uintptr_t)p & 7)) {
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= crc;   /* little-endian host assumed; see rr_crc32c */
		crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
		      crc_table[5][(w >> 16) & 0xff] ^
		      crc_table[4][(w >> 24) & 0xff] ^
		      crc_table[3][(w >> 32) & 0xff] ^
		      crc_table[2][(w >> 40) & 0xff] ^
		      crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

static int have_sse42(void)
{
	static int cached = -1;
	if (cached < 0)
		cached = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	return cached;
}
#endif

/* Standard CRC32C: init and final xor with ~0; chainable through crc. */
uint32_t rr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#if defined(__x86_64__)
	if (have_sse42())
		return ~crc32c_hw(crc, buf, len);
#endif
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "crc32c_sw assumes a little-endian host"
#endif
	return ~crc32c_sw(crc, buf, len);
}

/* Exposed for the self-test: the software path regardless of CPU. */
uint32_t rr_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32c_sw(~crc, buf, len);
}
