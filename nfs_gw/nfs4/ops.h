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
NFS4_OP(destroy_clientid);
NFS4_OP(reclaim_complete);
NFS4_OP(sequence);

#endif
