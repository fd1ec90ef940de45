# MDS failover between daemons that stand for separate machines (issue 19):
# mds.a and mds.b each in a network namespace of its own, the mount in the
# root namespace reaching them over veth pairs (private /30s that exist only
# on those veths).  kill -9 of the active, a partition of the active from
# the client (it keeps its rank), mds fail.  Needs root and `ip netns`
# (skipped, 77, without them).
loligo_fuse_suite(netns 600 LIBS loligo_store loligo_proto loligo_common)
