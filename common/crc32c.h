/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of the MDS protocol frames
 * and of journal entries.  Uses SSE4.2 crc32 instructions when the CPU has
 * them, a slicing-by-8 table otherwise.
 */
#ifndef LOLIGO_COMMON_CRC32C_H
#define LOLIGO_COMMON_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/**
 * crc32c - extend @crc over @len bytes of @buf.  Start with crc = 0; the
 * result of crc32c(0, "123456789", 9) is 0xe3069283.
 */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * The two implementations behind crc32c(), exposed for tests and
 * benchmarks.  crc32c_hw() may only be called when crc32c_hw_available().
 */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len);
int crc32c_hw_available(void);

#endif
