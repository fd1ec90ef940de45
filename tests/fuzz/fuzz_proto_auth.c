/* fuzz_proto_auth.c - libFuzzer target: the AUTH payload decoder (fuzz_proto.h). */
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_payload(MDSP_MSG_AUTH, data, size);
}
