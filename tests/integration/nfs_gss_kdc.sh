#!/bin/sh
# nfs_gss_kdc.sh DIR PORT - a throwaway MIT Kerberos realm for
# test_nfs_gss: krb5.conf and kdc.conf in DIR (point KRB5_CONFIG and
# KRB5_KDC_PROFILE at them), a database with the principals the test uses
# and their keytabs.  The test starts krb5kdc itself (so it owns its pid).
#   nfs.keytab    nfs/localhost and host/localhost (the gateway's keytab)
#   user.keytab   daemon (a local user: the mapping), ghost (no local user)
#   other.keytab  other/localhost (a service principal of another service)
set -eu
dir=$1
port=$2
realm=LOLIGO.TEST
cat > "$dir/krb5.conf" <<CONF
[libdefaults]
	default_realm = $realm
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = 1h
	# MIT lets a context live a clock skew past its ticket's end (5 min by
	# default): short, so that the expired-ticket case ends in seconds
	clockskew = 2
[realms]
	$realm = {
		kdc = 127.0.0.1:$port
	}
CONF
cat > "$dir/kdc.conf" <<CONF
[kdcdefaults]
	kdc_listen = 127.0.0.1:$port
	kdc_tcp_listen = 127.0.0.1:$port
[realms]
	$realm = {
		database_name = $dir/principal
		key_stash_file = $dir/stash
		acl_file = $dir/kadm5.acl
		max_life = 1h
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}
[logging]
	kdc = FILE:$dir/kdc.log
CONF
: > "$dir/kadm5.acl"
export KRB5_CONFIG="$dir/krb5.conf" KRB5_KDC_PROFILE="$dir/kdc.conf"
kdb5_util create -s -r $realm -P "test-master-$$" > "$dir/setup.log" 2>&1
for p in nfs/localhost host/localhost other/localhost daemon ghost; do
	kadmin.local -r $realm -q "addprinc -randkey $p" >> "$dir/setup.log" 2>&1
done
kadmin.local -r $realm -q "ktadd -k $dir/nfs.keytab nfs/localhost host/localhost" >> "$dir/setup.log" 2>&1
kadmin.local -r $realm -q "ktadd -k $dir/user.keytab daemon ghost" >> "$dir/setup.log" 2>&1
kadmin.local -r $realm -q "ktadd -k $dir/other.keytab other/localhost" >> "$dir/setup.log" 2>&1
