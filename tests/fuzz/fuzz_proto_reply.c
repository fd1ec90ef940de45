/* fuzz_proto_reply.c - libFuzzer target: the REPLY payload decoder (fuzz_proto.h). */
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_payload(MDSP_MSG_REPLY, data, size);
}
