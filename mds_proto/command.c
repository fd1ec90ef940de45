/*
 * command.c - COMMAND and COMMAND_REPLY: admin commands carried over the MDS
 * port (`loligo tell mds.0 ...`), a tid and a JSON document each way.  The
 * codec only bounds the JSON (MDSP_JSON_MAX) and rejects NULs in it; the MDS
 * parses it.
 */
#include <stdlib.h>

#include "mds_proto/proto_int.h"

int enc_command(struct mdsp_buf *b, const struct mdsp_command *cmd)
{
	size_t off;
	int r;

	if ((r = enc_check_str(cmd->json, MDSP_JSON_MAX, "command json")))
		return r;
	off = struct_open(b, V_COMMAND, 1);
	put_u64(b, cmd->tid);
	put_str(b, cmd->json);
	struct_close(b, off);
	return 0;
}

int dec_command(struct cur *c, struct mdsp_command *cmd)
{
	const uint8_t *outer;
	int r;

	if ((r = struct_enter(c, V_COMMAND, &outer, NULL)))
		return r;
	if ((r = get_u64(c, &cmd->tid)) || (r = get_str(c, &cmd->json, MDSP_JSON_MAX))) {
		free_command(cmd);
		return r;
	}
	struct_leave(c, outer);
	return 0;
}

void free_command(struct mdsp_command *cmd)
{
	free(cmd->json);
	cmd->json = NULL;
}

int enc_command_reply(struct mdsp_buf *b, const struct mdsp_command_reply *cr)
{
	size_t off;
	int r;

	if ((r = enc_check_str(cr->json, MDSP_JSON_MAX, "command reply json")))
		return r;
	off = struct_open(b, V_COMMAND_REPLY, 1);
	put_u64(b, cr->tid);
	put_s32(b, cr->result);
	put_str(b, cr->json);
	struct_close(b, off);
	return 0;
}

int dec_command_reply(struct cur *c, struct mdsp_command_reply *cr)
{
	const uint8_t *outer;
	int r;

	if ((r = struct_enter(c, V_COMMAND_REPLY, &outer, NULL)))
		return r;
	if ((r = get_u64(c, &cr->tid)) || (r = get_s32(c, &cr->result)) ||
	    (r = get_str(c, &cr->json, MDSP_JSON_MAX))) {
		free_command_reply(cr);
		return r;
	}
	struct_leave(c, outer);
	return 0;
}

void free_command_reply(struct mdsp_command_reply *cr)
{
	free(cr->json);
	cr->json = NULL;
}
