/*
 * proto_seedgen.c - writes the seed corpora of the MDS protocol fuzz targets
 * (tests/fuzz/seeds/fuzz_proto_*) from the encoder and the unit tests'
 * sample messages.  Run it after a wire format change:
 *     build-fuzz/tests/proto_seedgen tests/fuzz/seeds
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "mds_proto/proto.h"
#include "../unit/proto_samples.h"

static const char *target_of(uint16_t type)
{
	switch (type) {
	case MDSP_MSG_SESSION: return "fuzz_proto_session";
	case MDSP_MSG_REQUEST: return "fuzz_proto_request";
	case MDSP_MSG_REPLY: return "fuzz_proto_reply";
	case MDSP_MSG_CAPS: return "fuzz_proto_caps";
	case MDSP_MSG_AUTH: return "fuzz_proto_auth";
	default: return "fuzz_proto_command";
	}
}

static int write_seed(const char *dir, const char *target, int n, uint8_t prefix,
		      bool with_prefix, const uint8_t *d, size_t len)
{
	char path[4096];
	FILE *f;

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -1;
	snprintf(path, sizeof(path), "%s/%s/seed-%02d", dir, target, n);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	if (with_prefix)
		fputc(prefix, f);
	fwrite(d, 1, len, f);
	return fclose(f);
}

int main(int argc, char **argv)
{
	struct mdsp_msg s[64];
	struct mdsp_buf b;
	int i, n, per_type[8] = { 0 }, nframe = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SEED_DIR\n", argv[0]);
		return 2;
	}
	n = sample_all_small(s);
	for (i = 0; i < n; i++) {
		uint16_t t = s[i].type;
		bool cmd = t == MDSP_MSG_COMMAND || t == MDSP_MSG_COMMAND_REPLY;

		mdsp_buf_init(&b);
		if (mdsp_encode(&b, &s[i])) {
			fprintf(stderr, "encode failed\n");
			return 1;
		}
		if (write_seed(argv[1], target_of(t), per_type[cmd ? 5 : t]++,
			       t == MDSP_MSG_COMMAND_REPLY, cmd, b.data + MDSP_HDR_LEN,
			       b.len - MDSP_HDR_LEN) ||
		    write_seed(argv[1], "fuzz_proto_frame", nframe++, 0, true, b.data, b.len) ||
		    write_seed(argv[1], "fuzz_proto_frame", nframe++, 1, true, b.data, b.len)) {
			perror("write seed");
			return 1;
		}
		mdsp_buf_free(&b);
		mdsp_msg_free(&s[i]);
	}
	return 0;
}
