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
	[OP_ACCESS] = { "ACCESS", nfs4_op_access, F },
	[OP_CLOSE] = { "CLOSE", nfs4_op_close, F | M },
	[OP_COMMIT] = { "COMMIT", nfs4_op_commit, F },
	[OP_CREATE] = { "CREATE", nfs4_op_create, F | M },
	[OP_DELEGPURGE] = { "DELEGPURGE", NULL, M },
	[OP_DELEGRETURN] = { "DELEGRETURN", nfs4_op_delegreturn, F | M },
	[OP_GETATTR] = { "GETATTR", nfs4_op_getattr, F },
	[OP_GETFH] = { "GETFH", nfs4_op_getfh, F },
	[OP_LINK] = { "LINK", nfs4_op_link, F | M },
	[OP_LOCK] = { "LOCK", nfs4_op_lock, F | M },
	[OP_LOCKT] = { "LOCKT", nfs4_op_lockt, F },
	[OP_LOCKU] = { "LOCKU", nfs4_op_locku, F | M },
	[OP_LOOKUP] = { "LOOKUP", nfs4_op_lookup_name, F },
	[OP_LOOKUPP] = { "LOOKUPP", nfs4_op_lookupp, F },
	[OP_NVERIFY] = { "NVERIFY", nfs4_op_nverify, F },
	[OP_OPEN] = { "OPEN", nfs4_op_open, F | M },
	[OP_OPENATTR] = { "OPENATTR", NULL, F },
	[OP_OPEN_CONFIRM] = { "OPEN_CONFIRM", nfs4_op_open_confirm, F | M | OPF_V40_ONLY },
	[OP_OPEN_DOWNGRADE] = { "OPEN_DOWNGRADE", nfs4_op_open_downgrade, F | M },
	[OP_PUTFH] = { "PUTFH", nfs4_op_putfh, 0 },
	[OP_PUTPUBFH] = { "PUTPUBFH", nfs4_op_putpubfh, 0 },
	[OP_PUTROOTFH] = { "PUTROOTFH", nfs4_op_putrootfh, 0 },
	[OP_READ] = { "READ", nfs4_op_read, F },
	[OP_READDIR] = { "READDIR", nfs4_op_readdir, F },
	[OP_READLINK] = { "READLINK", nfs4_op_readlink, F },
	[OP_REMOVE] = { "REMOVE", nfs4_op_remove, F | M },
	[OP_RENAME] = { "RENAME", nfs4_op_rename, F | M },
	[OP_RENEW] = { "RENEW", nfs4_op_renew, OPF_V40_ONLY },
	[OP_RESTOREFH] = { "RESTOREFH", nfs4_op_restorefh, 0 },
	[OP_SAVEFH] = { "SAVEFH", nfs4_op_savefh, F },
	[OP_SECINFO] = { "SECINFO", nfs4_op_secinfo, F },
	[OP_SETATTR] = { "SETATTR", nfs4_op_setattr, F | M | OPF_ATTRSSET },
	[OP_SETCLIENTID] = { "SETCLIENTID", nfs4_op_setclientid, M | OPF_V40_ONLY },
	[OP_SETCLIENTID_CONFIRM] = { "SETCLIENTID_CONFIRM", nfs4_op_setclientid_confirm, M | OPF_V40_ONLY },
	[OP_VERIFY] = { "VERIFY", nfs4_op_verify, F },
	[OP_WRITE] = { "WRITE", nfs4_op_write, F | M },
	[OP_RELEASE_LOCKOWNER] = { "RELEASE_LOCKOWNER", nfs4_op_release_lockowner, M | OPF_V40_ONLY },

	[OP_BACKCHANNEL_CTL] = { "BACKCHANNEL_CTL", nfs4_op_backchannel_ctl, OPF_V41 },
	[OP_BIND_CONN_TO_SESSION] = { "BIND_CONN_TO_SESSION", nfs4_op_bind_conn_to_session,
				      OPF_V41 | OPF_SESSIONLESS },
	[OP_EXCHANGE_ID] = { "EXCHANGE_ID", nfs4_op_exchange_id, OPF_V41 | OPF_SESSIONLESS },
	[OP_CREATE_SESSION] = { "CREATE_SESSION", nfs4_op_create_session, OPF_V41 | OPF_SESSIONLESS },
	[OP_DESTROY_SESSION] = { "DESTROY_SESSION", nfs4_op_destroy_session, OPF_V41 | OPF_SESSIONLESS },
	[OP_FREE_STATEID] = { "FREE_STATEID", nfs4_op_free_stateid, OPF_V41 },
	[OP_GET_DIR_DELEGATION] = { "GET_DIR_DELEGATION", NULL, OPF_V41 | F },
	[OP_GETDEVICEINFO] = { "GETDEVICEINFO", NULL, OPF_V41 },
	[OP_GETDEVICELIST] = { "GETDEVICELIST", NULL, OPF_V41 | F },
	[OP_LAYOUTCOMMIT] = { "LAYOUTCOMMIT", NULL, OPF_V41 | F },
	[OP_LAYOUTGET] = { "LAYOUTGET", NULL, OPF_V41 | F },
	[OP_LAYOUTRETURN] = { "LAYOUTRETURN", NULL, OPF_V41 | F },
	[OP_SECINFO_NO_NAME] = { "SECINFO_NO_NAME", nfs4_op_secinfo_no_name, OPF_V41 | F },
	[OP_SEQUENCE] = { "SEQUENCE", nfs4_op_sequence, OPF_V41 },
	[OP_SET_SSV] = { "SET_SSV", NULL, OPF_V41 },
	[OP_TEST_STATEID] = { "TEST_STATEID", nfs4_op_test_stateid, OPF_V41 },
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
