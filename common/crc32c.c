/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82f63b78).
 *
 * Two implementations with identical results: the SSE4.2 crc32 instruction
 * (8 bytes per instruction) and slicing-by-8 tables for CPUs without it.
 * The choice is made once, at load time, with __builtin_cpu_supports(), so
 * one binary runs everywhere; the hardware path is compiled with a target
 * attribute rather than -msse4.2 for the whole library.
 */
#include "common/crc32c.h"

#include <string.h>

#define POLY 0x82f63b78u

static uint32_t table[8][256];

__attribute__((constructor)) static void crc32c_init_table(void)
{
	uint32_t n, crc, k;

	for (n = 0; n < 256; n++) {
		crc = n;
		for (k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ POLY : crc >> 1;
		table[0][n] = crc;
	}
	for (n = 0; n < 256; n++) {
		crc = table[0][n];
		for (k = 1; k < 8; k++) {
			crc = table[0][crc & 0xff] ^ (crc >> 8);
			table[k][n] = crc;
		}
	}
}

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	crc = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		w ^= crc;
		crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
		      table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
		      table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
		      table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

int crc32c_hw_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_sw(crc, buf, len);
}

int crc32c_hw_available(void)
{
	return 0;
}
#endif

static uint32_t (*crc32c_impl)(uint32_t, const void *, size_t) = crc32c_sw;

__attribute__((constructor)) static void crc32c_choose(void)
{
	if (crc32c_hw_available())
		crc32c_impl = crc32c_hw;
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_impl(crc, buf, len);
}
