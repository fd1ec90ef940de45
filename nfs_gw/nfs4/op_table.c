/*
 * op_table.c - the NFSv4 operation table: name, function and checks for
 * every operation number of minor versions 0 and 1.  A NULL function
 * answers NFS4ERR_NOTSUPP; fill one in by writing nfs4_op_<name>() in the
 * ops_<area>.c file that holds its neighbours, declaring it in ops.h and
 * naming it here.
 *
 * OPF_MODIFIES marks the operations that change state, so an NFSv4.0
 * compound containing one goes through the duplicate reply cache.
 */
#include <stddef.h>

#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/nfs4/ops.h"

#define M OPF_MODIFIES
#define F OPF_NEED_FH

static const struct nfs4_op_desc ops[NFS4_OP_MAX + 1] = {
	[OP_ACCESS] = { "ACCESS", NULL, F },
	[OP_CLOSE] = { "CLOSE", NULL, F | M },
	[OP_COMMIT] = { "COMMIT", NULL, F },
	[OP_CREATE] = { "CREATE", NULL, F | M },
	[OP_DELEGPURGE] = { "DELEGPURGE", NULL, M },
	[OP_DELEGRETURN] = { "DELEGRETURN", NULL, F | M },
	[OP_GETATTR] = { "GETATTR", NULL, F },
	[OP_GETFH] = { "GETFH", NULL, F },
	[OP_LINK] = { "LINK", NULL, F | M },
	[OP_LOCK] = { "LOCK", NULL, F | M },
	[OP_LOCKT] = { "LOCKT", NULL, F },
	[OP_LOCKU] = { "LOCKU", NULL, F | M },
	[OP_LOOKUP] = { "LOOKUP", NULL, F },
	[OP_LOOKUPP] = { "LOOKUPP", NULL, F },
	[OP_NVERIFY] = { "NVERIFY", NULL, F },
	[OP_OPEN] = { "OPEN", NULL, F | M },
	[OP_OPENATTR] = { "OPENATTR", NULL, F },
	[OP_OPEN_CONFIRM] = { "OPEN_CONFIRM", NULL, F | M | OPF_V40_ONLY },
	[OP_OPEN_DOWNGRADE] = { "OPEN_DOWNGRADE", NULL, F | M },
	[OP_PUTFH] = { "PUTFH", NULL, 0 },
	[OP_PUTPUBFH] = { "PUTPUBFH", NULL, 0 },
	[OP_PUTROOTFH] = { "PUTROOTFH", NULL, 0 },
	[OP_READ] = { "READ", NULL, F },
	[OP_READDIR] = { "READDIR", NULL, F },
	[OP_READLINK] = { "READLINK", NULL, F },
	[OP_REMOVE] = { "REMOVE", NULL, F | M },
	[OP_RENAME] = { "RENAME", NULL, F | M },
	[OP_RENEW] = { "RENEW", NULL, OPF_V40_ONLY },
	[OP_RESTOREFH] = { "RESTOREFH", NULL, 0 },
	[OP_SAVEFH] = { "SAVEFH", NULL, F },
	[OP_SECINFO] = { "SECINFO", NULL, F },
	[OP_SETATTR] = { "SETATTR", NULL, F | M },
	[OP_SETCLIENTID] = { "SETCLIENTID", NULL, M | OPF_V40_ONLY },
	[OP_SETCLIENTID_CONFIRM] = { "SETCLIENTID_CONFIRM", NULL, M | OPF_V40_ONLY },
	[OP_VERIFY] = { "VERIFY", NULL, F },
	[OP_WRITE] = { "WRITE", NULL, F | M },
	[OP_RELEASE_LOCKOWNER] = { "RELEASE_LOCKOWNER", NULL, M | OPF_V40_ONLY },

	[OP_BACKCHANNEL_CTL] = { "BACKCHANNEL_CTL", NULL, OPF_V41 },
	[OP_BIND_CONN_TO_SESSION] = { "BIND_CONN_TO_SESSION", nfs4_op_bind_conn_to_session,
				      OPF_V41 | OPF_SESSIONLESS },
	[OP_EXCHANGE_ID] = { "EXCHANGE_ID", nfs4_op_exchange_id, OPF_V41 | OPF_SESSIONLESS },
	[OP_CREATE_SESSION] = { "CREATE_SESSION", nfs4_op_create_session, OPF_V41 | OPF_SESSIONLESS },
	[OP_DESTROY_SESSION] = { "DESTROY_SESSION", nfs4_op_destroy_session, OPF_V41 | OPF_SESSIONLESS },
	[OP_FREE_STATEID] = { "FREE_STATEID", NULL, OPF_V41 },
	[OP_GET_DIR_DELEGATION] = { "GET_DIR_DELEGATION", NULL, OPF_V41 | F },
	[OP_GETDEVICEINFO] = { "GETDEVICEINFO", NULL, OPF_V41 },
	[OP_GETDEVICELIST] = { "GETDEVICELIST", NULL, OPF_V41 | F },
	[OP_LAYOUTCOMMIT] = { "LAYOUTCOMMIT", NULL, OPF_V41 | F },
	[OP_LAYOUTGET] = { "LAYOUTGET", NULL, OPF_V41 | F },
	[OP_LAYOUTRETURN] = { "LAYOUTRETURN", NULL, OPF_V41 | F },
	[OP_SECINFO_NO_NAME] = { "SECINFO_NO_NAME", NULL, OPF_V41 | F },
	[OP_SEQUENCE] = { "SEQUENCE", nfs4_op_sequence, OPF_V41 },
	[OP_SET_SSV] = { "SET_SSV", NULL, OPF_V41 },
	[OP_TEST_STATEID] = { "TEST_STATEID", NULL, OPF_V41 },
	[OP_WANT_DELEGATION] = { "WANT_DELEGATION", NULL, OPF_V41 | F },
	[OP_DESTROY_CLIENTID] = { "DESTROY_CLIENTID", nfs4_op_destroy_clientid, OPF_V41 | OPF_SESSIONLESS },
	[OP_RECLAIM_COMPLETE] = { "RECLAIM_COMPLETE", nfs4_op_reclaim_complete, OPF_V41 },
};

const struct nfs4_op_desc *nfs4_op_lookup(uint32_t op)
{
	if (op > NFS4_OP_MAX || !ops[op].name)
		return NULL;
	return &ops[op];
}
