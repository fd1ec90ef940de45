/*
 * session.c - SESSION messages: open, renew, close, reconnect (with the
 * caps the client still holds), stale, evicted, reject.  One struct serves
 * every session op; fields an op does not use travel as zeros.
 *
 * Version 2 appends the session secret (OPEN on a connection without MAC
 * keys) and the RECONNECT proof; a version-1 struct decodes with both all
 * zeros, which no MDS takes as a proof.
 * Version 3 appends max_file_size (the OPEN reply tells the client the
 * filesystem's limit); an older struct decodes with it 0.
 * Version 4 appends the client's metadata (REQUEST_OPEN and RECONNECT: host
 * name, mount point, version...: u32 count, then key and value strings),
 * bounded by MDSP_META_*; an older struct decodes with none.
 * Version 5 appends the file locks a RECONNECT re-asserts (in the OPEN that
 * answers it: the ones not granted back) and the client's data-store
 * address (what an eviction fences); older structs decode with none.
 * Version 6 appends what a REQUEST_RENEW says of the client's stalled
 * operations (how many, the oldest described); older structs decode with
 * none.
 * Version 7 appends the session a REQUEST_OPEN reclaims (the id and uuid
 * of the same client's dead predecessor, client/reclaim.c); older structs
 * decode with none (0: nothing to reclaim).
 */
#include <stdlib.h>

#include "mds_proto/proto_int.h"

int enc_session(struct mdsp_buf *b, const struct mdsp_session *s)
{
	size_t off, coff;
	uint32_t i;
	int r;

	if ((r = enc_check_str(s->client_name, MDSP_CLIENT_NAME_MAX, "session client_name")) ||
	    (r = enc_check_str(s->reason, REASON_MAX, "session reason")) ||
	    (r = enc_check_count(s->ncaps, UINT32_MAX, s->caps, "session caps")) ||
	    (r = enc_check_count(s->nmeta, MDSP_META_MAX, s->meta, "session metadata")) ||
	    (r = enc_check_count(s->nlocks, UINT32_MAX, s->locks, "session locks")) ||
	    (r = enc_check_str(s->store_addr, MDSP_STORE_ADDR_MAX, "session store_addr")) ||
	    (r = enc_check_str(s->slow_op, MDSP_SLOW_OP_MAX, "session slow_op")))
		return r;
	for (i = 0; i < s->nmeta; i++)
		if (!s->meta[i].key || !s->meta[i].val ||
		    (r = enc_check_str(s->meta[i].key, MDSP_META_KEY_MAX, "session metadata key")) ||
		    (r = enc_check_str(s->meta[i].val, MDSP_META_VAL_MAX, "session metadata value")))
			return r ? r : -EINVAL;
	for (i = 0; i < s->ncaps; i++)
		if ((r = enc_check_str(s->caps[i].dname, MDSP_NAME_MAX, "reconnect lease name")))
			return r;

	off = struct_open(b, V_SESSION, 1);
	put_u32(b, s->op);
	put_u64(b, s->session_id);
	put_u64(b, s->seq);
	put_str(b, s->client_name);
	put_bytes(b, s->client_uuid, sizeof(s->client_uuid));
	put_u32(b, s->lease_ms);
	put_s32(b, s->result);
	put_str(b, s->reason);
	put_u64(b, s->mds_epoch);
	put_u32(b, s->ncaps);
	for (i = 0; i < s->ncaps; i++) {
		coff = struct_open(b, V_CAP_RECONNECT, 1);
		put_u64(b, s->caps[i].ino);
		put_u32(b, s->caps[i].caps);
		put_u32(b, s->caps[i].wanted);
		put_str(b, s->caps[i].dname);
		put_u64(b, s->caps[i].seq);
		struct_close(b, coff);
	}
	put_bytes(b, s->secret, sizeof(s->secret));
	put_bytes(b, s->proof, sizeof(s->proof));
	put_u64(b, s->max_file_size);
	put_u32(b, s->nmeta);
	for (i = 0; i < s->nmeta; i++) {
		put_str(b, s->meta[i].key);
		put_str(b, s->meta[i].val);
	}
	put_u32(b, s->nlocks);                  /* v5 */
	for (i = 0; i < s->nlocks; i++)
		enc_lock(b, &s->locks[i]);
	put_str(b, s->store_addr);
	put_u32(b, s->slow_ops);                /* v6 */
	put_str(b, s->slow_op);
	put_u64(b, s->reclaim_sid);             /* v7 */
	put_bytes(b, s->reclaim_uuid, sizeof(s->reclaim_uuid));
	put_u64(b, s->deleg_tid);               /* v8 */
	struct_close(b, off);
	return 0;
}

static int dec_cap_reconnect(struct cur *c, struct mdsp_cap_reconnect *cr)
{
	const uint8_t *outer;
	uint8_t v;
	int r;

	if (struct_enter(c, V_CAP_RECONNECT, &outer, &v))
		return -EBADMSG;
	if (get_u64(c, &cr->ino) || get_u32(c, &cr->caps) || get_u32(c, &cr->wanted))
		return -EBADMSG;
	if (v >= 2 && ((r = get_str(c, &cr->dname, MDSP_NAME_MAX)) || (r = get_u64(c, &cr->seq)))) {
		free(cr->dname);
		cr->dname = NULL;
		return r;
	}
	struct_leave(c, outer);
	return 0;
}

int dec_session(struct cur *c, struct mdsp_session *s)
{
	const uint8_t *outer;
	uint32_t i, n;
	uint8_t version;
	int r;

	if ((r = struct_enter(c, V_SESSION, &outer, &version)))
		return r;
	if ((r = get_u32(c, &s->op)) || (r = get_u64(c, &s->session_id)) ||
	    (r = get_u64(c, &s->seq)) ||
	    (r = get_str(c, &s->client_name, MDSP_CLIENT_NAME_MAX)) ||
	    (r = get_bytes(c, s->client_uuid, sizeof(s->client_uuid))) ||
	    (r = get_u32(c, &s->lease_ms)) || (r = get_s32(c, &s->result)) ||
	    (r = get_str(c, &s->reason, REASON_MAX)) || (r = get_u64(c, &s->mds_epoch)) ||
	    (r = get_count(c, &n, UINT32_MAX, CAP_RECONNECT_WIRE_MIN)))
		goto bad;
	if (n) {
		s->caps = calloc(n, sizeof(*s->caps));
		if (!s->caps) {
			r = -ENOMEM;
			goto bad;
		}
		s->ncaps = n;
		for (i = 0; i < n; i++)
			if ((r = dec_cap_reconnect(c, &s->caps[i])))
				goto bad;
	}
	if (version >= 2 && ((r = get_bytes(c, s->secret, sizeof(s->secret))) ||
			     (r = get_bytes(c, s->proof, sizeof(s->proof)))))
		goto bad;
	/* versions 1 and 2 (older peers) end here: max_file_size stays 0, "not said" */
	if (version >= 3 && (r = get_u64(c, &s->max_file_size)))
		goto bad;
	/* version 3 ends here: no metadata */
	if (version >= 4) {
		if ((r = get_count(c, &n, MDSP_META_MAX, 8)))
			goto bad;
		if (n) {
			s->meta = calloc(n, sizeof(*s->meta));
			if (!s->meta) {
				r = -ENOMEM;
				goto bad;
			}
			s->nmeta = n;
			for (i = 0; i < n; i++)
				if ((r = get_str(c, &s->meta[i].key, MDSP_META_KEY_MAX)) ||
				    (r = get_str(c, &s->meta[i].val, MDSP_META_VAL_MAX)))
					goto bad;
				else if (!s->meta[i].key || !s->meta[i].val) {
					r = -EBADMSG;
					goto bad;
				}
		}
	}
	/* version 4 ends here: no locks, no store address */
	if (version >= 5) {
		if ((r = get_count(c, &n, UINT32_MAX, LOCK_WIRE_MIN)))
			goto bad;
		if (n) {
			s->locks = calloc(n, sizeof(*s->locks));
			if (!s->locks) {
				r = -ENOMEM;
				goto bad;
			}
			s->nlocks = n;
			for (i = 0; i < n; i++)
				if ((r = dec_lock(c, &s->locks[i])))
					goto bad;
		}
		if ((r = get_str(c, &s->store_addr, MDSP_STORE_ADDR_MAX)))
			goto bad;
	}
	/* version 5 ends here: no slow operations */
	if (version >= 6 && ((r = get_u32(c, &s->slow_ops)) || (r = get_str(c, &s->slow_op, MDSP_SLOW_OP_MAX))))
		goto bad;
	/* version 6 ends here: nothing to reclaim */
	if (version >= 7 && ((r = get_u64(c, &s->reclaim_sid)) ||
			     (r = get_bytes(c, s->reclaim_uuid, sizeof(s->reclaim_uuid)))))
		goto bad;
	/* version 7 ends here: no bound on the tids naming old delegations */
	if (version >= 8 && (r = get_u64(c, &s->deleg_tid)))
		goto bad;
	struct_leave(c, outer);
	return 0;
bad:
	free_session(s);
	return r;
}

void free_session(struct mdsp_session *s)
{
	uint32_t i;

	for (i = 0; i < s->nmeta && s->meta; i++) {
		free(s->meta[i].key);
		free(s->meta[i].val);
	}
	free(s->meta);
	s->meta = NULL;
	s->nmeta = 0;
	free(s->client_name);
	free(s->reason);
	if (s->caps)
		for (i = 0; i < s->ncaps; i++)
			free(s->caps[i].dname);
	free(s->caps);
	free(s->locks);
	free(s->store_addr);
	free(s->slow_op);
	s->slow_op = NULL;
	s->client_name = NULL;
	s->reason = NULL;
	s->caps = NULL;
	s->ncaps = 0;
	s->locks = NULL;
	s->nlocks = 0;
	s->store_addr = NULL;
}
