/*
 * auth.c - what authentication between clients and the MDS is made of: the
 * AUTH message codec, the frame MACs (HMAC-SHA256, AES-256-GMAC), the derivations
 * both sides compute from an entity's secret and the two nonces of a
 * connection, and keyring files.
 *
 * The crypto is OpenSSL's libcrypto (EVP_MAC "HMAC" with SHA-256, AES-256-GCM
 * with only additional data for GMAC, CRYPTO_memcmp, RAND_bytes,
 * EVP_EncodeBlock): nothing here computes a hash or compares secrets by hand.  The construction follows cephx's shape
 * without its tickets (one MDS, no monitors):
 *
 *   client proof  = HMAC(K, "loligo-auth-v1 client proof" | name | Nc | Ns)
 *   mds proof     = HMAC(K, "loligo-auth-v1 mds proof"    | name | Nc | Ns)
 *   MAC keys      = HMAC(K, "loligo-auth-v1 c2m key" | ...), "... m2c key"
 *   GMAC keys     = HMAC(K, "loligo-auth-v1 c2m gmac key" | ...), "... m2c gmac key"
 *   session secret= HMAC(K, "loligo-auth-v1 session secret" | ...)
 *
 * K is the entity's 32-byte secret, Nc and Ns 32 random bytes each side
 * picked for this connection.  A proof is worth nothing on another
 * connection (other nonces), the two directions have different MAC keys
 * (a frame cannot be reflected back to its sender), and the session secret
 * of an authenticated connection never travels.  Labels are NUL-terminated
 * in the input and the name is length-prefixed, so no two different inputs
 * concatenate to the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "mds_proto/proto_int.h"

/* ---- the AUTH message ------------------------------------------------------ */

int enc_auth(struct mdsp_buf *b, const struct mdsp_auth *a)
{
	size_t off;
	int r;

	if ((r = enc_check_str(a->name, MDSP_AUTH_NAME_MAX, "auth name")) ||
	    (r = enc_check_str(a->reason, REASON_MAX, "auth reason")))
		return r;
	off = struct_open(b, V_AUTH, 1);
	put_u32(b, a->op);
	put_u32(b, a->flags);
	put_str(b, a->name);
	put_bytes(b, a->nonce, sizeof(a->nonce));
	put_bytes(b, a->proof, sizeof(a->proof));
	put_s32(b, a->result);
	put_str(b, a->reason);
	struct_close(b, off);
	return 0;
}

int dec_auth(struct cur *c, struct mdsp_auth *a)
{
	const uint8_t *outer;
	int r;

	if ((r = struct_enter(c, V_AUTH, &outer, NULL)))
		return r;
	if ((r = get_u32(c, &a->op)) || (r = get_u32(c, &a->flags)) ||
	    (r = get_str(c, &a->name, MDSP_AUTH_NAME_MAX)) || (r = get_bytes(c, a->nonce, sizeof(a->nonce))) ||
	    (r = get_bytes(c, a->proof, sizeof(a->proof))) || (r = get_s32(c, &a->result)) ||
	    (r = get_str(c, &a->reason, REASON_MAX)))
		goto bad;
	struct_leave(c, outer);
	return 0;
bad:
	free_auth(a);
	return r;
}

void free_auth(struct mdsp_auth *a)
{
	free(a->name);
	free(a->reason);
	a->name = NULL;
	a->reason = NULL;
}

/* ---- frame MACs: HMAC-SHA256, AES-256-GMAC ------------------------------------ */

struct mdsp_mac {
	enum mdsp_mac_alg alg;
	EVP_MAC_CTX *ctx;         /* HMAC: keyed once; re-initialised (same key) per frame */
	EVP_CIPHER_CTX *gcm;      /* GMAC: keyed once; a new IV (the frame's seq) per frame */
};

static EVP_MAC *hmac_alg;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void hmac_fetch(void)
{
	hmac_alg = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
}

static EVP_MAC_CTX *hmac_ctx(const uint8_t *key, size_t keylen)
{
	OSSL_PARAM params[2] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC_CTX *ctx;

	pthread_once(&hmac_once, hmac_fetch);
	if (!hmac_alg)
		return NULL;
	ctx = EVP_MAC_CTX_new(hmac_alg);
	if (ctx && !EVP_MAC_init(ctx, key, keylen, params)) {
		EVP_MAC_CTX_free(ctx);
		ctx = NULL;
	}
	return ctx;
}

const char *mdsp_mac_alg_name(enum mdsp_mac_alg alg)
{
	return alg == MDSP_MAC_GMAC_AES256 ? "aes256-gmac" : "hmac-sha256";
}

int mdsp_mac_new(struct mdsp_mac **out, enum mdsp_mac_alg alg, const uint8_t key[MDSP_KEY_LEN])
{
	struct mdsp_mac *m;

	if (alg != MDSP_MAC_HMAC_SHA256 && alg != MDSP_MAC_GMAC_AES256)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->alg = alg;
	if (alg == MDSP_MAC_HMAC_SHA256) {
		m->ctx = hmac_ctx(key, MDSP_KEY_LEN);
	} else if ((m->gcm = EVP_CIPHER_CTX_new()) &&
		   !EVP_EncryptInit_ex(m->gcm, EVP_aes_256_gcm(), NULL, key, NULL)) {
		EVP_CIPHER_CTX_free(m->gcm);
		m->gcm = NULL;
	}
	if (!m->ctx && !m->gcm) {
		free(m);
		return -EIO;
	}
	*out = m;
	return 0;
}

void mdsp_mac_free(struct mdsp_mac *m)
{
	if (!m)
		return;
	EVP_MAC_CTX_free(m->ctx);
	EVP_CIPHER_CTX_free(m->gcm);
	free(m);
}

/* GCM over no plaintext, @a then @b as additional data: the tag, then zeros to MDSP_MAC_LEN */
static int gmac_compute(EVP_CIPHER_CTX *g, uint64_t seq, const uint8_t *a, size_t alen, const uint8_t *b,
			size_t blen, uint8_t out[MDSP_MAC_LEN])
{
	uint8_t iv[12] = { 0 };
	int n;

	if (alen > INT_MAX || blen > INT_MAX)
		return -EIO;
	le64(iv + 4, seq);
	memset(out, 0, MDSP_MAC_LEN);
	if (!EVP_EncryptInit_ex(g, NULL, NULL, NULL, iv) || !EVP_EncryptUpdate(g, NULL, &n, a, (int)alen) ||
	    (blen && !EVP_EncryptUpdate(g, NULL, &n, b, (int)blen)) || !EVP_EncryptFinal_ex(g, out, &n) ||
	    !EVP_CIPHER_CTX_ctrl(g, EVP_CTRL_GCM_GET_TAG, 16, out))
		return -EIO;
	return 0;
}

int mdsp_mac_compute(struct mdsp_mac *m, uint64_t seq, const uint8_t *a, size_t alen, const uint8_t *b,
		     size_t blen, uint8_t out[MDSP_MAC_LEN])
{
	size_t n = 0;

	if (m->alg == MDSP_MAC_GMAC_AES256)
		return gmac_compute(m->gcm, seq, a, alen, b, blen, out);
	/* HMAC: the seq is in the header it covers; a NULL key re-initialises
	 * the context with the key it has */
	if (!EVP_MAC_init(m->ctx, NULL, 0, NULL) || !EVP_MAC_update(m->ctx, a, alen) ||
	    (blen && !EVP_MAC_update(m->ctx, b, blen)) || !EVP_MAC_final(m->ctx, out, &n, MDSP_MAC_LEN) ||
	    n != MDSP_MAC_LEN)
		return -EIO;
	return 0;
}

int mdsp_hmac(const uint8_t *key, size_t keylen, const void *const *parts, const size_t *lens, int n,
	      uint8_t out[MDSP_MAC_LEN])
{
	EVP_MAC_CTX *ctx = hmac_ctx(key, keylen);
	size_t outlen = 0;
	int i, r = 0;

	if (!ctx)
		return -EIO;
	for (i = 0; i < n && !r; i++)
		if (lens[i] && !EVP_MAC_update(ctx, parts[i], lens[i]))
			r = -EIO;
	if (!r && (!EVP_MAC_final(ctx, out, &outlen, MDSP_MAC_LEN) || outlen != MDSP_MAC_LEN))
		r = -EIO;
	EVP_MAC_CTX_free(ctx);
	return r;
}

bool mdsp_mac_equal(const uint8_t *a, const uint8_t *b)
{
	return CRYPTO_memcmp(a, b, MDSP_MAC_LEN) == 0;
}

int mdsp_random(void *buf, size_t n)
{
	return RAND_bytes(buf, (int)n) == 1 ? 0 : -EIO;
}

static const char *const derive_labels[] = {
	[MDSP_DERIVE_CLIENT_PROOF] = "loligo-auth-v1 client proof",
	[MDSP_DERIVE_MDS_PROOF] = "loligo-auth-v1 mds proof",
	[MDSP_DERIVE_KEY_C2M] = "loligo-auth-v1 c2m key",
	[MDSP_DERIVE_KEY_M2C] = "loligo-auth-v1 m2c key",
	[MDSP_DERIVE_SESSION] = "loligo-auth-v1 session secret",
	[MDSP_DERIVE_GMAC_C2M] = "loligo-auth-v1 c2m gmac key",
	[MDSP_DERIVE_GMAC_M2C] = "loligo-auth-v1 m2c gmac key",
};

int mdsp_auth_derive(const uint8_t secret[MDSP_KEY_LEN], enum mdsp_derive what, const char *name,
		     const uint8_t cnonce[MDSP_NONCE_LEN], const uint8_t snonce[MDSP_NONCE_LEN],
		     uint8_t out[MDSP_MAC_LEN])
{
	const char *label;
	uint8_t nlen[4];
	size_t len;

	if ((unsigned)what >= sizeof(derive_labels) / sizeof(derive_labels[0]) || !name)
		return -EINVAL;
	label = derive_labels[what];
	len = strlen(name);
	le32(nlen, (uint32_t)len);
	{
		const void *parts[] = { label, nlen, name, cnonce, snonce };
		const size_t lens[] = { strlen(label) + 1, 4, len, MDSP_NONCE_LEN, MDSP_NONCE_LEN };

		return mdsp_hmac(secret, MDSP_KEY_LEN, parts, lens, 5, out);
	}
}

int mdsp_auth_macs(const uint8_t secret[MDSP_KEY_LEN], enum mdsp_mac_alg alg, const char *name,
		   const uint8_t cnonce[MDSP_NONCE_LEN], const uint8_t snonce[MDSP_NONCE_LEN],
		   struct mdsp_mac **c2m, struct mdsp_mac **m2c)
{
	bool gmac = alg == MDSP_MAC_GMAC_AES256;
	uint8_t kc[MDSP_MAC_LEN], km[MDSP_MAC_LEN];
	int r;

	*c2m = *m2c = NULL;
	r = mdsp_auth_derive(secret, gmac ? MDSP_DERIVE_GMAC_C2M : MDSP_DERIVE_KEY_C2M, name, cnonce, snonce, kc);
	if (!r)
		r = mdsp_auth_derive(secret, gmac ? MDSP_DERIVE_GMAC_M2C : MDSP_DERIVE_KEY_M2C, name, cnonce, snonce,
				     km);
	if (!r)
		r = mdsp_mac_new(c2m, alg, kc);
	if (!r && (r = mdsp_mac_new(m2c, alg, km))) {
		mdsp_mac_free(*c2m);
		*c2m = NULL;
	}
	OPENSSL_cleanse(kc, sizeof(kc));
	OPENSSL_cleanse(km, sizeof(km));
	return r;
}

int mdsp_reconnect_proof(const uint8_t secret[MDSP_KEY_LEN], uint64_t sid, const uint8_t cnonce[MDSP_NONCE_LEN],
			 const uint8_t snonce[MDSP_NONCE_LEN], uint8_t out[MDSP_MAC_LEN])
{
	static const char label[] = "loligo-auth-v1 reconnect";
	uint8_t id[8];
	const void *parts[] = { label, id, cnonce, snonce };
	const size_t lens[] = { sizeof(label), 8, MDSP_NONCE_LEN, MDSP_NONCE_LEN };

	le64(id, sid);
	return mdsp_hmac(secret, MDSP_KEY_LEN, parts, lens, 4, out);
}

/* ---- keyrings ------------------------------------------------------------------ */

bool mdsp_auth_name_valid(const char *name)
{
	size_t n;
	const char *p;

	if (!name || strncmp(name, "client.", 7))
		return false;
	n = strlen(name + 7);
	if (n == 0 || n > MDSP_AUTH_NAME_MAX - 8)
		return false;
	for (p = name + 7; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '.' || *p == '-'))
			return false;
	return true;
}

void mdsp_key_base64(const uint8_t secret[MDSP_KEY_LEN], char *out, size_t outlen)
{
	unsigned char tmp[64];

	EVP_EncodeBlock(tmp, secret, MDSP_KEY_LEN);     /* 44 characters and a NUL */
	snprintf(out, outlen, "%s", (char *)tmp);
}

int mdsp_key_unbase64(const char *s, uint8_t secret[MDSP_KEY_LEN])
{
	unsigned char tmp[64];
	size_t len = strlen(s);
	int n, pad = 0;

	if (len != 44)
		return -EINVAL;
	while (pad < 2 && s[len - 1 - pad] == '=')
		pad++;
	n = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)len);
	if (n < 0 || n - pad != MDSP_KEY_LEN)
		return -EINVAL;
	memcpy(secret, tmp, MDSP_KEY_LEN);
	OPENSSL_cleanse(tmp, sizeof(tmp));
	return 0;
}

const struct mdsp_key *mdsp_keyring_find(const struct mdsp_keyring *kr, const char *name)
{
	size_t i;

	for (i = 0; name && i < kr->n; i++)
		if (!strcmp(kr->keys[i].name, name))
			return &kr->keys[i];
	return NULL;
}

int mdsp_keyring_add(struct mdsp_keyring *kr, const char *name, const uint8_t secret[MDSP_KEY_LEN])
{
	struct mdsp_key *k = (struct mdsp_key *)mdsp_keyring_find(kr, name);

	if (!mdsp_auth_name_valid(name))
		return -EINVAL;
	if (!k) {
		if (kr->n == kr->cap) {
			size_t cap = kr->cap ? kr->cap * 2 : 8;
			struct mdsp_key *nk = realloc(kr->keys, cap * sizeof(*nk));

			if (!nk)
				return -ENOMEM;
			kr->keys = nk;
			kr->cap = cap;
		}
		k = &kr->keys[kr->n++];
		memset(k, 0, sizeof(*k));
		snprintf(k->name, sizeof(k->name), "%s", name);
	}
	memcpy(k->secret, secret, MDSP_KEY_LEN);
	return 0;
}

int mdsp_keyring_set_caps(struct mdsp_keyring *kr, const char *name, const char *caps, char *err, size_t errlen)
{
	struct mdsp_key *k = (struct mdsp_key *)mdsp_keyring_find(kr, name);
	struct mdsp_mdscaps *parsed;
	char *dup = NULL;
	int r = 0;

	if (!k) {
		snprintf(err, errlen, "no key for %s", name ? name : "");
		return -ENOENT;
	}
	if (caps) {
		parsed = malloc(sizeof(*parsed));
		if (!parsed)
			return -ENOMEM;
		r = mdsp_mdscaps_parse(caps, parsed, err, errlen);
		free(parsed);
		if (r)
			return r;
		if (!(dup = strdup(caps)))
			return -ENOMEM;
	}
	free(k->caps);
	k->caps = dup;
	return 0;
}

int mdsp_keyring_remove(struct mdsp_keyring *kr, const char *name)
{
	struct mdsp_key *k = (struct mdsp_key *)mdsp_keyring_find(kr, name);
	size_t i;

	if (!k)
		return -ENOENT;
	i = (size_t)(k - kr->keys);
	free(k->caps);
	OPENSSL_cleanse(k, sizeof(*k));
	memmove(k, k + 1, (kr->n - i - 1) * sizeof(*k));
	kr->n--;
	return 0;
}

void mdsp_keyring_free(struct mdsp_keyring *kr)
{
	for (size_t i = 0; i < kr->n; i++)
		free(kr->keys[i].caps);
	if (kr->keys)
		OPENSSL_cleanse(kr->keys, kr->cap * sizeof(*kr->keys));
	free(kr->keys);
	memset(kr, 0, sizeof(*kr));
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/*
 * A keyring's secrets let whoever reads them act as those clients, and
 * whoever may write it can plant a key: like ssh with a private key, take
 * it only if nobody but its owner may touch it.  Checked on the open file
 * (fstat), so what is judged is what is read.
 */
static int check_private(FILE *f, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fileno(f), &st)) {
		int r = -errno;

		snprintf(err, errlen, "keyring %s: %s", path, strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "keyring %s is not a regular file: point the option at the keyring file itself",
			 path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "Permissions %04o for '%s' are too open: a keyring must not be accessible by "
				      "group or others (its keys let whoever reads it act as those clients); "
				      "run 'chmod 600 %s'", (unsigned)(st.st_mode & 07777), path, path);
		return -EPERM;
	}
	return 0;
}

/* The caps line of section @section (read before or after its key), once the section ends. */
static int caps_flush(struct mdsp_keyring *kr, const char *section, char **caps, int line, const char *path,
		      char *err, size_t errlen)
{
	char why[MDSP_MDSCAPS_STR_MAX + 256];
	int r;

	if (!*caps)
		return 0;
	r = mdsp_keyring_set_caps(kr, section, *caps, why, sizeof(why));
	free(*caps);
	*caps = NULL;
	if (r == -ENOENT)
		snprintf(err, errlen, "keyring %s line %d: caps for [%s], which has no key", path, line, section);
	else if (r)
		snprintf(err, errlen, "keyring %s line %d: [%s]: %s", path, line, section, why);
	return r;
}

int mdsp_keyring_load(const char *path, struct mdsp_keyring *kr, char *err, size_t errlen)
{
	return mdsp_keyring_load_flags(path, 0, kr, err, errlen);
}

int mdsp_keyring_load_flags(const char *path, unsigned flags, struct mdsp_keyring *kr, char *err, size_t errlen)
{
	char line[MDSP_MDSCAPS_STR_MAX + 64], section[MDSP_AUTH_NAME_MAX + 2] = "", *s, *eq, *pending_caps = NULL;
	int caps_line = 0;
	bool have_key = true, in_header = false;
	int lineno = 0, r = 0;
	FILE *f;

	memset(kr, 0, sizeof(*kr));
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "keyring %s: %s", path, strerror(-r));
		return r;
	}
	if ((flags & MDSP_KEYRING_PRIVATE) && (r = check_private(f, path, err, errlen))) {
		fclose(f);
		return r;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');

			if (!have_key && !in_header) {
				snprintf(err, errlen, "keyring %s: [%s] has no key", path, section);
				r = -EINVAL;
				break;
			}
			if ((r = caps_flush(kr, section, &pending_caps, caps_line, path, err, errlen)))
				break;
			if (!end || end[1] || (size_t)(end - s - 1) >= sizeof(section)) {
				snprintf(err, errlen, "keyring %s line %d: bad section header", path, lineno);
				r = -EINVAL;
				break;
			}
			*end = '\0';
			snprintf(section, sizeof(section), "%s", s + 1);
			in_header = !strcmp(section, "keyring");
			if (in_header) {
				have_key = true;
				continue;
			}
			if (!mdsp_auth_name_valid(section)) {
				snprintf(err, errlen, "keyring %s line %d: '%s' is not an entity name (client.NAME)",
					 path, lineno, section);
				r = -EINVAL;
				break;
			}
			have_key = false;
			continue;
		}
		eq = strchr(s, '=');
		if (!eq || !*section) {
			snprintf(err, errlen, "keyring %s line %d: expected [client.NAME] or key = BASE64", path,
				 lineno);
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		s = trim(s);
		if (in_header) {
			char *end;
			long v;

			if (strcmp(s, "version"))
				continue;
			v = strtol(trim(eq + 1), &end, 10);
			if (*end || v < 1) {
				snprintf(err, errlen, "keyring %s line %d: version is not a number", path, lineno);
				r = -EINVAL;
				break;
			}
			if (v > MDSP_KEYRING_VERSION) {
				snprintf(err, errlen, "keyring %s line %d: version %ld, this loligo reads up to %d: "
					 "it was written by a newer loligo", path, lineno, v, MDSP_KEYRING_VERSION);
				r = -EINVAL;
				break;
			}
			continue;
		}
		if (!strcmp(s, "caps mds") || !strncmp(s, "caps mds ", 9) || !strncmp(s, "caps mds\t", 9)) {
			char *v = trim(eq + 1);
			size_t vl = strlen(v);

			if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
				v[vl - 1] = '\0';
				v++;
			}
			free(pending_caps);
			if (!(pending_caps = strdup(v))) {
				r = -ENOMEM;
				snprintf(err, errlen, "keyring %s: %s", path, strerror(-r));
				break;
			}
			caps_line = lineno;
			continue;
		}
		if (strcmp(s, "key"))
			continue;       /* other caps (mon, osd) and the like: not ours */
		{
			uint8_t secret[MDSP_KEY_LEN];

			if (mdsp_key_unbase64(trim(eq + 1), secret)) {
				snprintf(err, errlen, "keyring %s line %d: the key of %s is not base64 of %d bytes",
					 path, lineno, section, MDSP_KEY_LEN);
				r = -EINVAL;
				break;
			}
			r = mdsp_keyring_add(kr, section, secret);
			OPENSSL_cleanse(secret, sizeof(secret));
			if (r) {
				snprintf(err, errlen, "keyring %s: %s", path, strerror(-r));
				break;
			}
			have_key = true;
		}
	}
	if (!r && !have_key) {
		snprintf(err, errlen, "keyring %s: [%s] has no key", path, section);
		r = -EINVAL;
	}
	if (!r)
		r = caps_flush(kr, section, &pending_caps, caps_line, path, err, errlen);
	free(pending_caps);
	if (!r && ferror(f)) {
		r = -EIO;
		snprintf(err, errlen, "keyring %s: read error", path);
	}
	fclose(f);
	OPENSSL_cleanse(line, sizeof(line));
	if (r)
		mdsp_keyring_free(kr);
	return r;
}

int mdsp_keyring_save(const char *path, const struct mdsp_keyring *kr, char *err, size_t errlen)
{
	char tmp[4096], b64[64];
	size_t i;
	FILE *f;
	int fd, r = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "keyring %s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = mkstemp(tmp);              /* mode 0600 */
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "keyring %s: cannot create %s: %s", path, tmp, strerror(-r));
		return r;
	}
	fchmod(fd, 0600);
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		goto fail;
	}
	/* the version header only when it matters: a keyring without caps
	 * stays readable by a loligo that predates them */
	for (i = 0; i < kr->n; i++)
		if (kr->keys[i].caps) {
			fprintf(f, "[keyring]\n\tversion = %d\n", MDSP_KEYRING_VERSION);
			break;
		}
	for (i = 0; i < kr->n; i++) {
		mdsp_key_base64(kr->keys[i].secret, b64, sizeof(b64));
		fprintf(f, "[%s]\n\tkey = %s\n", kr->keys[i].name, b64);
		if (kr->keys[i].caps)
			fprintf(f, "\tcaps mds = \"%s\"\n", kr->keys[i].caps);
	}
	OPENSSL_cleanse(b64, sizeof(b64));
	if (fflush(f) || fsync(fileno(f)))
		r = -errno;
	if (fclose(f) && !r)
		r = -errno;
	if (r)
		goto fail;
	if (rename(tmp, path)) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "keyring %s: cannot write it: %s", path, strerror(-r));
	unlink(tmp);
	return r;
}
