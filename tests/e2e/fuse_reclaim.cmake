# A crashed client comes back at once (issue 19.4): a loligo-fuse restarted
# after kill -9 with the same name and mount point reclaims its dead
# predecessor's session (client/reclaim.c, mds/session.c), so another
# client's create in a directory the dead one held goes through and the
# remount serves without waiting for mds_session_timeout; a second live
# process with the same name and mount point is refused; a gateway alone
# restarted on its address releases the locks its NFS clients held; a live
# client cut off from the MDS keeps its session (it reconnects, nothing
# reclaims it).
if(TARGET loligo_gw)
  loligo_fuse_suite(reclaim 300 LIBS loligo_gw loligo_proto loligo_common DEPENDS latency_proxy)
endif()
