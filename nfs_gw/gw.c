/*
 * gw.c - start and stop the embedded NFS gateway (gw.h).
 *
 * Wiring only: the duplicate reply cache, the RPC service with its
 * transport and workers, and the NFSv4 server registered on it, all sized
 * from the [nfs] options.  Teardown runs in the reverse order: the RPC
 * service first (no request runs after it returns), then the NFSv4 state,
 * then the DRC (whose entries hold the last transport references).
 */
#include <errno.h>
#include <stdlib.h>

#include "common/config.h"
#include "common/log.h"
#include "nfs_gw/gw.h"
#include "nfs_gw/nfs4/nfs4.h"
#include "nfs_gw/rpc/drc.h"
#include "nfs_gw/rpc/rpc.h"

struct gw {
	struct drc *drc;
	struct rpc_svc *svc;
	struct nfs4_server *nfs4;
	uint16_t port;
};

static bool port_check(void *arg, const struct rpc_req *req)
{
	/* nfs_require_privileged_port: calls from ports >= 1024 are refused */
	return false;
}

int gw_start(const char *addr_port, struct lclient *c, struct asok *asok, struct gw **out)
{
	struct rpc_svc_params sp;
	struct drc_params dp;
	struct nfs4_params np;
	struct gw *gw;
	int r;

	gw = calloc(1, sizeof(*gw));
	if (!gw)
		return -ENOMEM;
	rpc_svc_params_from_config(&sp);
	drc_params_from_config(&dp);
	nfs4_params_from_config(&np, sp.max_record, sp.max_reply);

	r = drc_create(&dp, &gw->drc);
	if (r)
		goto out_free;
	r = rpc_svc_create(&sp, gw->drc, &gw->svc);
	if (r)
		goto out_drc;
	r = nfs4_server_create(&np, c, &gw->nfs4);
	if (r)
		goto out_svc;
	r = nfs4_register(gw->nfs4, gw->svc);
	if (r)
		goto out_nfs4;
	if (cfg_bool(CFG_nfs_require_privileged_port))
		rpc_svc_set_port_check(gw->svc, port_check, gw);
	r = rpc_svc_start(gw->svc, addr_port);
	if (r)
		goto out_nfs4;
	gw->port = rpc_svc_port(gw->svc);
	if (asok) {
		drc_asok_attach(gw->drc, asok);
		nfs4_asok_attach(gw->nfs4, asok);
	}
	dinfo(NFS, "NFS gateway serving NFSv4.1 and NFSv4.0 on %s (port %u)", addr_port, gw->port);
	*out = gw;
	return 0;

out_nfs4:
	rpc_svc_destroy(gw->svc);
	gw->svc = NULL;
	nfs4_server_destroy(gw->nfs4);
out_svc:
	rpc_svc_destroy(gw->svc);
out_drc:
	drc_destroy(gw->drc);
out_free:
	free(gw);
	return r;
}

uint16_t gw_port(const struct gw *gw)
{
	return gw ? gw->port : 0;
}

void gw_stop(struct gw *gw)
{
	if (!gw)
		return;
	rpc_svc_destroy(gw->svc);
	nfs4_server_destroy(gw->nfs4);
	drc_destroy(gw->drc);
	dinfo(NFS, "NFS gateway stopped");
	free(gw);
}
