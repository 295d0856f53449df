/* CRC32C against the standard check value and hw == sw on random data. */
#include "testlib.h"

uint32_t rr_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t rr_crc32c_sw(uint32_t crc, const void *buf, size_t len);

int main(void)
{
	/* RFC 3720 / iSCSI check value for "123456789". */
	CHECK(rr_crc32c(0, "123456789", 9) == 0xe3069283u, "crc32c check");
	CHECK(rr_crc32c_sw(0, "123456789", 9) == 0xe3069283u, "sw check");

	uint8_t buf[4099];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < 200; len += 7)
			CHECK(rr_crc32c(0, buf + off, len) ==
			      rr_crc32c_sw(0, buf + off, len), "hw/sw %zu", len);
	/* Chaining: crc(a||b) == crc(crc(a), b). */
	CHECK(rr_crc32c(rr_crc32c(0, buf, 1000), buf + 1000, 3099) ==
	      rr_crc32c(0, buf, 4099), "chaining");
	printf("test_crc: ok\n");
	return 0;
}
