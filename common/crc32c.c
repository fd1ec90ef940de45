/*
 * crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82f63b78).
 *
 * Two implementations with identical results: the SSE4.2 crc32 instruction
 * (8 bytes per instruction, three streams at once: crc32c_hw) and
 * slicing-by-8 tables for CPUs without it.
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
/*
 * The crc32 instruction takes three cycles and starts one a cycle: a single
 * chain of them keeps the unit a third busy (1.7 GB/s here, a 276 KB
 * listing 170 us on each side of the wire).  So three chains run at once
 * over three adjacent blocks, and their registers are joined after: CRC's
 * register (before the final inversion) is linear over GF(2), so the
 * register after A|B is the one after A moved over |B| zero bytes, xor the
 * one of B alone started from zero.  Moving a register over a fixed number
 * of zero bytes is a 32x32 matrix over GF(2), applied a byte of the
 * register at a time through four 256-entry tables per block size, built
 * once at load time (Mark Adler's construction for zlib's crc32_combine).
 */
#define LONG_BLOCK 8192u
#define LONG_LOG2 13u
#define SHORT_BLOCK 256u
#define SHORT_LOG2 8u

static uint32_t shift_long[4][256], shift_short[4][256];

/* @mat (mat[i]: the image of bit i) applied to @vec */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec)
{
	uint32_t sum = 0;

	for (; vec; vec >>= 1, mat++)
		if (vec & 1)
			sum ^= *mat;
	return sum;
}

/* @mat applied twice, as a matrix */
static void gf2_square(uint32_t *sq, const uint32_t *mat)
{
	for (int n = 0; n < 32; n++)
		sq[n] = gf2_times(mat, mat[n]);
}

/* the tables that move a register over 2^@log2 zero bytes */
static void shift_tables(uint32_t tab[4][256], unsigned log2)
{
	uint32_t a[32], b[32], *op = a, *next = b, *t;

	/* one zero bit: the register shifts right, and its low bit brings the polynomial */
	op[0] = POLY;
	for (int n = 1; n < 32; n++)
		op[n] = 1u << (n - 1);
	/* squared 3 + log2 times: 2^(3 + log2) zero bits */
	for (unsigned i = 0; i < 3 + log2; i++) {
		gf2_square(next, op);
		t = op;
		op = next;
		next = t;
	}
	for (int k = 0; k < 4; k++)
		for (uint32_t v = 0; v < 256; v++)
			tab[k][v] = gf2_times(op, v << (8 * k));
}

__attribute__((constructor)) static void crc32c_init_shift(void)
{
	shift_tables(shift_long, LONG_LOG2);
	shift_tables(shift_short, SHORT_LOG2);
}

static inline uint32_t shift(uint32_t tab[4][256], uint32_t c)
{
	return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^ tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

static inline uint64_t rd64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

/* three chains over the blocks [p, p + 3 * @block) starting from register @c; the joined register */
__attribute__((target("sse4.2"))) static inline uint64_t crc3(uint64_t c, const unsigned char *p, size_t block,
							   uint32_t tab[4][256])
{
	uint64_t c1 = 0, c2 = 0;
	const unsigned char *end = p + block;

	do {
		c = __builtin_ia32_crc32di(c, rd64(p));
		c1 = __builtin_ia32_crc32di(c1, rd64(p + block));
		c2 = __builtin_ia32_crc32di(c2, rd64(p + 2 * block));
		p += 8;
	} while (p < end);
	c = shift(tab, (uint32_t)c) ^ c1;
	return shift(tab, (uint32_t)c) ^ c2;
}

__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t c = ~crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	for (; len >= 3 * LONG_BLOCK; p += 3 * LONG_BLOCK, len -= 3 * LONG_BLOCK)
		c = crc3(c, p, LONG_BLOCK, shift_long);
	for (; len >= 3 * SHORT_BLOCK; p += 3 * SHORT_BLOCK, len -= 3 * SHORT_BLOCK)
		c = crc3(c, p, SHORT_BLOCK, shift_short);
	while (len >= 8) {
		c = __builtin_ia32_crc32di(c, rd64(p));
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
