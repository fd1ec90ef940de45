/*
 * siphash.h - SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit
 * hash of short strings, for values a peer must not be able to collide on
 * purpose (a peer that chooses names could otherwise make a directory's
 * readdir cookies, or a hash table's chains, cost what it likes).
 */
#ifndef LOLIGO_COMMON_SIPHASH_H
#define LOLIGO_COMMON_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/** siphash24 - the SipHash-2-4 of @len bytes at @data under the 16-byte @key. */
uint64_t siphash24(const uint8_t key[16], const void *data, size_t len);

#endif
