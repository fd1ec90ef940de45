# `loligo fs set` on a running filesystem (issue 22.5): max_file_size lowered
# and raised online (EFBIG at once on the mount, kept across a kill -9 of the
# MDS), refuse_client_session, bad values refused with a reason, settings
# kept with the filesystem winning over the config file.
loligo_fuse_suite(fsset 600)
