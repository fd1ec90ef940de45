/*
 * ops.h - every NFSv4 operation function, by file.  See nfs4.h for the
 * calling convention.  An operation nobody has written yet is NULL in
 * op_table.c and answers NFS4ERR_NOTSUPP.
 */
#ifndef LOLIGO_NFS_GW_NFS4_OPS_H
#define LOLIGO_NFS_GW_NFS4_OPS_H

#include "nfs_gw/nfs4/nfs4.h"

#define NFS4_OP(name) uint32_t nfs4_op_##name(struct nfs4_compound *cs, struct xdr_dec *args, struct xdr_enc *res)

/* ops_session.c: NFSv4.1 clients and sessions */
NFS4_OP(exchange_id);
NFS4_OP(create_session);
NFS4_OP(destroy_session);
NFS4_OP(bind_conn_to_session);
NFS4_OP(backchannel_ctl);
NFS4_OP(destroy_clientid);
NFS4_OP(reclaim_complete);
NFS4_OP(sequence);

/* The filesystem operations (owner: nfs4ops) */
/* ops_fh.c */
NFS4_OP(putrootfh);
NFS4_OP(putpubfh);
NFS4_OP(putfh);
NFS4_OP(getfh);
NFS4_OP(savefh);
NFS4_OP(restorefh);
NFS4_OP(lookup_name);    /* nfs4_op_lookup() is the table lookup */
NFS4_OP(lookupp);
/* ops_attr.c */
NFS4_OP(getattr);
NFS4_OP(setattr);
NFS4_OP(verify);
NFS4_OP(nverify);
NFS4_OP(access);
/* ops_open.c */
NFS4_OP(open);
NFS4_OP(open_confirm);
NFS4_OP(open_downgrade);
NFS4_OP(close);
/* ops_io.c */
NFS4_OP(read);
NFS4_OP(write);
NFS4_OP(commit);
/* ops_dir.c */
NFS4_OP(create);
NFS4_OP(remove);
NFS4_OP(rename);
NFS4_OP(link);
NFS4_OP(readlink);
NFS4_OP(readdir);
/* ops_lock.c */
NFS4_OP(lock);
NFS4_OP(lockt);
NFS4_OP(locku);
NFS4_OP(release_lockowner);
/* ops_state.c */
NFS4_OP(free_stateid);
NFS4_OP(test_stateid);
NFS4_OP(delegreturn);
NFS4_OP(secinfo);
NFS4_OP(secinfo_no_name);
/* ops_v40.c */
NFS4_OP(setclientid);
NFS4_OP(setclientid_confirm);
NFS4_OP(renew);

#endif
