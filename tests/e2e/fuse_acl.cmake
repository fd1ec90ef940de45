# POSIX ACLs through a FUSE mount with -o acl (issue 22.3): named users and
# groups, the mask and chmod, equivalent ACLs, malformed ones, default ACL
# inheritance, step for step against a local ext4 (or tmpfs) as unprivileged
# users; setfacl/getfacl through the mount.
loligo_fuse_suite(acl 600)
