/* fuzz_proto_session.c - libFuzzer target: the SESSION payload decoder (fuzz_proto.h). */
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_payload(MDSP_MSG_SESSION, data, size);
}
