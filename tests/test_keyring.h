/*
 * test_keyring.h - the keyrings every test that starts a real MDS and a real
 * client needs: <dir>/keyring for the MDS (mds_keyring) and
 * <dir>/client.keyring for the client (client_keyring), both holding one
 * fresh key for client.admin (the default client_auth_name).
 */
#ifndef LOLIGO_TESTS_TEST_KEYRING_H
#define LOLIGO_TESTS_TEST_KEYRING_H

#include <errno.h>
#include <stdio.h>

#include "mds_proto/proto.h"

static __attribute__((unused)) int test_write_keyrings(const char *dir)
{
	struct mdsp_keyring kr = { 0 };
	uint8_t key[MDSP_KEY_LEN];
	char path[4200], err[512];
	int r = mdsp_random(key, sizeof(key));

	if (!r)
		r = mdsp_keyring_add(&kr, "client.admin", key);
	if (snprintf(path, sizeof(path), "%.4096s/keyring", dir) < 0)
		return -EINVAL;
	if (!r)
		r = mdsp_keyring_save(path, &kr, err, sizeof(err));
	if (snprintf(path, sizeof(path), "%.4096s/client.keyring", dir) < 0)
		return -EINVAL;
	if (!r)
		r = mdsp_keyring_save(path, &kr, err, sizeof(err));
	if (r)
		fprintf(stderr, "test keyrings in %s: %s\n", dir, err);
	mdsp_keyring_free(&kr);
	return r;
}

#endif
