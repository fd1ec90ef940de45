/* fuzz_proto_request.c - libFuzzer target: the REQUEST payload decoder (fuzz_proto.h). */
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_payload(MDSP_MSG_REQUEST, data, size);
}
