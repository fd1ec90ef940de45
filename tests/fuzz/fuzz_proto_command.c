/*
 * fuzz_proto_command.c - libFuzzer target: the COMMAND and COMMAND_REPLY
 * payload decoders.  The first input byte picks which (even: COMMAND).
 */
#include "fuzz_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	return fuzz_payload(data[0] & 1 ? MDSP_MSG_COMMAND_REPLY : MDSP_MSG_COMMAND,
			    data + 1, size - 1);
}
