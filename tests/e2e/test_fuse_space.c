/*
 * test_fuse_space.c - space and data-path semantics programs rely on
 * (issue 25, items 3, 11, 12 and 13), through real FUSE mounts of one
 * filesystem (a second loligo-fuse process wherever another client can
 * observe the result), each case asserting what a program would see, as
 * ext4 shows it:
 *
 *   fallocate_reserves  on a small disk: fallocate(0) past the free space
 *                       fails with ENOSPC and changes nothing; one that
 *                       fits (and KEEP_SIZE) counts its range in st_blocks
 *                       on both mounts; once another file filled the disk
 *                       (ENOSPC), writes into the fallocated ranges still
 *                       succeed, fsync included, and read back intact
 *   blocks              st_blocks counts what is stored, not whole objects
 *                       from their start: 50 KiB written at 1.6 MiB, a 4 KiB
 *                       write at the end of a 1 GiB truncated file, one byte
 *                       at the end of 100 MiB (dd seek=), a file written end
 *                       to end; the second mount sees the same; a punched
 *                       hole and a truncate take their part away; all of it
 *                       survives an MDS restart
 *   seek_data_hole      lseek's SEEK_DATA and SEEK_HOLE find the data and
 *                       the holes: 50 KiB at 1.6 MiB of a 3 MiB file on the
 *                       writing handle before any fsync, and on the other
 *                       mount, which opens it while the writer still buffers
 *                       (within the 4 KiB granules the MDS counts in); the
 *                       end of the file is a hole, past it ENXIO; cp
 *                       --sparse=auto copies it sparse; a file written end to
 *                       end is all data; a punched hole is a hole on both
 *                       mounts; an empty file has neither
 *   zero_range          FALLOC_FL_ZERO_RANGE inside the file, past its end
 *                       (the size grows) and with KEEP_SIZE (it does not);
 *                       the other mount reads the zeros
 *   chattr              FS_IOC_SETFLAGS +i / +a through FUSE: lsattr's
 *                       FS_IOC_GETFLAGS on the other mount shows them;
 *                       immutable refuses opens for writing, writes through
 *                       a handle opened before, truncate, fallocate, unlink,
 *                       rename, link, chmod, chown, utimes and setxattr with
 *                       EPERM on both mounts; append-only lets O_APPEND
 *                       writes through and refuses the rest; the flags
 *                       survive an MDS restart
 *   direct_write        an asynchronous O_DIRECT writer (io_submit) rewrites
 *                       a 640 KiB file pass after pass and reads every pass
 *                       back through the page cache while two processes keep
 *                       reading the file buffered: each read-back after a
 *                       completed write sees that pass's bytes
 *
 * FALLOC_FL_COLLAPSE_RANGE and INSERT_RANGE have no case: the kernel's
 * fuse_file_fallocate() refuses them with EOPNOTSUPP before asking.
 *
 * Every case gets a fresh filesystem from an unchecked fixture (the
 * teardown runs when a case fails).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tests/e2e/test_fuse_harness.h"
#include "tests/lib/wait.h"

#define KiB (1024ll)
#define MiB (1024ll * 1024)
#define GiB (1024ll * MiB)

static struct lfs fs;

/* what fallocate_reserves reserves: with fallocate(0), and with KEEP_SIZE */
#define RESV (2 * MiB)
#define KEEP (1 * MiB)

/* a failed check shows the daemons' logs */
#define EXPECT(cond, ...)                                  \
	do {                                               \
		if (!(cond)) {                             \
			lfs_dump_logs(&fs);                \
			ck_abort_msg(__VA_ARGS__);         \
		}                                          \
	} while (0)

/* @call fails with @err (errno) */
#define EXPECT_ERR(call, err, what)                                                                     \
	do {                                                                                            \
		errno = 0;                                                                              \
		long r_ = (long)(call);                                                                 \
		EXPECT(r_ == -1 && errno == (err), "%s: %s (want %s)", what,                           \
		       r_ == -1 ? strerror(errno) : "succeeded", strerror(err));                        \
	} while (0)

static const char *at(const char *mnt, const char *rel)
{
	static __thread char buf[8][PATH_MAX + 256];
	static __thread int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", mnt, rel);
	return buf[i];
}

static void setup_two(const char *conf)
{
	if (lfs_init_with(&fs, conf) != 0 || lfs_mds_start(&fs) != 0 || lfs_mount(&fs, "allow_other") != 0 ||
	    lfs_mount2(&fs, "allow_other") != 0) {
		lfs_dump_logs(&fs);
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
}

static void setup(void)
{
	setup_two(NULL);
}

static void teardown(void)
{
	lfs_cleanup(&fs);
}

static void fill(unsigned char *buf, size_t n, unsigned seed, off_t off)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = lfs_pat(seed, off + (off_t)i);
}

/* pwrite @len pattern bytes (seed, file offset) at @off in 1 MiB pieces; 0 or the errno of the first failure */
static int pwrite_pat(int fd, off_t off, off_t len, unsigned seed)
{
	static unsigned char buf[MiB];

	for (off_t done = 0; done < len;) {
		size_t n = len - done < MiB ? (size_t)(len - done) : MiB;

		fill(buf, n, seed, off + done);
		ssize_t w = pwrite(fd, buf, n, off + done);
		if (w < 0)
			return errno;
		if (w == 0)
			return EIO;
		done += w;
	}
	return 0;
}

/*
 * [off, off+len) of @path holds pattern @seed shifted by @delta (byte B
 * holds lfs_pat(seed, B + delta)), or zeros when @zero.  0, or -1 with the
 * first difference in @why.
 */
static int check_range(const char *path, off_t off, off_t len, unsigned seed, off_t delta, bool zero, char *why,
		       size_t whylen)
{
	static unsigned char buf[MiB];
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		snprintf(why, whylen, "open %s: %s", path, strerror(errno));
		return -1;
	}
	for (off_t done = 0; done < len;) {
		size_t n = len - done < MiB ? (size_t)(len - done) : MiB;
		ssize_t r = pread(fd, buf, n, off + done);

		if (r <= 0) {
			snprintf(why, whylen, "%s: read at %lld: %s", path, (long long)(off + done),
				 r < 0 ? strerror(errno) : "end of file");
			close(fd);
			return -1;
		}
		for (ssize_t i = 0; i < r; i++) {
			off_t b = off + done + i;
			unsigned char want = zero ? 0 : lfs_pat(seed, b + delta);

			if (buf[i] != want) {
				snprintf(why, whylen, "%s: byte %lld is 0x%02x, want 0x%02x (%s)", path, (long long)b,
					 buf[i], want, zero ? "zero" : "data");
				close(fd);
				return -1;
			}
		}
		done += r;
	}
	close(fd);
	return 0;
}

#define EXPECT_RANGE(path, off, len, seed, delta, zero)                                                 \
	do {                                                                                            \
		char why_[512];                                                                         \
		EXPECT(check_range(path, off, len, seed, delta, zero, why_, sizeof(why_)) == 0, "%s", why_); \
	} while (0)

static struct stat st_of(const char *path)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	EXPECT(stat(path, &st) == 0, "stat %s: %s", path, strerror(errno));
	return st;
}

/* ---- item 3: fallocate reserves space ------------------------------------- */

static char disk[PATH_MAX];

/* in the check parent: the tmpfs must be unmounted even when the case fails */
static void setup_disk(void)
{
	if (lfs_init(&fs) != 0) {
		lfs_cleanup(&fs);
		fprintf(stderr, "e2e setup failed\n");
		exit(1);
	}
	snprintf(disk, sizeof(disk), "%s/disk", fs.dir);
	if (mkdir(disk, 0755) < 0 || mount("tmpfs", disk, "tmpfs", 0, "size=64m,mode=0755") < 0) {
		fprintf(stderr, "cannot mount a 64 MiB tmpfs on %s: %s\n", disk, strerror(errno));
		lfs_cleanup(&fs);
		exit(1);
	}
}

static void teardown_disk(void)
{
	if (disk[0])
		umount2(disk, MNT_DETACH);
	lfs_cleanup(&fs);
}

/* bytes in use on the small disk */
static long long disk_used(void)
{
	struct statvfs v;

	if (statvfs(disk, &v) < 0)
		return -1;
	return (long long)(v.f_blocks - v.f_bfree) * (long long)v.f_frsize;
}

START_TEST(test_fallocate_reserves)
{
	char mds[PATH_MAX], out[PATH_MAX + 16];
	struct stat st;
	const char *where = "";
	int fd, fd2, ff, err = 0;
	FILE *f;

	/*
	 * Both stores on the 64 MiB tmpfs.  Writes into fallocated space are
	 * taken up to the failsafe ratio (their file blocks exist; the redo log
	 * still holds their bytes until its next checkpoint): on a disk this
	 * small the 2% between the default full and failsafe ratios is 1.3 MiB,
	 * less than one object, so the full ratio is 50% here.  The bytes
	 * written into the reserved ranges below pass through the redo log, and
	 * space the log freed at a checkpoint is not counted as free again
	 * (statvfs does not see LMDB's free pages), while the store's LMDB
	 * files take the disk well past the full ratio before the filler sees
	 * ENOSPC (84% of it, seen): the reserved ranges are kept small enough
	 * (RESV + KEEP, 3 MiB) that their log fits in what is left below the
	 * failsafe ratio however late the checkpoints run.  With 12 MiB the
	 * last fsync failed now and then on a loaded machine.
	 */
	f = fopen(fs.conf, "a");
	EXPECT(f != NULL, "append to %s", fs.conf);
	fprintf(f, "[global]\nstore_local_path = %s/store\nstore_local_data_path = %s/store.data\n"
		"mds_journal_expire_age = 600\nstore_local_full_ratio = 0.5\n", disk, disk);
	fclose(f);
	{
		char *argv[] = { (char *)lfs_bin("mds/loligo-mds", mds, sizeof(mds)), "-c", fs.conf, "--mkfs", NULL };
		snprintf(out, sizeof(out), "%s/mkfs-disk.out", fs.dir);
		EXPECT(lfs_run(argv, 30000, out) == 0, "mkfs on the tmpfs (see %s)", out);
	}
	EXPECT(lfs_mds_start(&fs) == 0 && lfs_mount(&fs, NULL) == 0 && lfs_mount2(&fs, NULL) == 0,
	       "cannot start loligo-mds and two mounts");

	/*
	 * Past the free space: ENOSPC, and the file's size is as it was.  The
	 * objects reserved before the one that failed keep their blocks (as
	 * ext4 keeps the extents of a fallocate that failed half way), and how
	 * many there are depends on how the object reservations raced: the
	 * file goes, and the rest of the case starts once its space is back.
	 */
	fd = open(at(fs.mnt, "toobig"), O_CREAT | O_RDWR, 0644);
	EXPECT(fd >= 0, "create toobig: %s", strerror(errno));
	EXPECT_ERR(fallocate(fd, 0, 0, 256 * MiB), ENOSPC, "fallocate of 256 MiB on a 64 MiB disk");
	EXPECT(fstat(fd, &st) == 0 && st.st_size == 0, "size %lld after the failed fallocate",
	       (long long)st.st_size);
	EXPECT(close(fd) == 0 && unlink(at(fs.mnt, "toobig")) == 0, "unlink toobig: %s", strerror(errno));
	EXPECT(LT_WAITED(disk_used() < 16 * MiB), "the purge of toobig left %lld MiB of the disk in use",
	       (long long)disk_used() / MiB);

	fd = open(at(fs.mnt, "prealloc"), O_CREAT | O_RDWR, 0644);
	EXPECT(fd >= 0, "create prealloc: %s", strerror(errno));

	/* what fits: the size and st_blocks say so, on both mounts */
	EXPECT(fallocate(fd, 0, 0, RESV) == 0, "fallocate of 2 MiB: %s", strerror(errno));
	EXPECT(fstat(fd, &st) == 0 && st.st_size == RESV, "size %lld after fallocate(0, 2 MiB)",
	       (long long)st.st_size);
	EXPECT(st.st_blocks * 512 >= RESV, "st_blocks %lld after fallocate of 2 MiB (want >= %lld)",
	       (long long)st.st_blocks, RESV / 512);
	fd2 = open(at(fs.mnt, "keep"), O_CREAT | O_RDWR, 0644);
	EXPECT(fd2 >= 0, "create keep: %s", strerror(errno));
	EXPECT(fallocate(fd2, FALLOC_FL_KEEP_SIZE, 0, KEEP) == 0, "fallocate KEEP_SIZE of 1 MiB: %s",
	       strerror(errno));
	EXPECT(fstat(fd2, &st) == 0 && st.st_size == 0, "size %lld after KEEP_SIZE", (long long)st.st_size);
	EXPECT(st.st_blocks * 512 >= KEEP, "st_blocks %lld after KEEP_SIZE of 1 MiB", (long long)st.st_blocks);
	st = st_of(at(fs.mnt2, "prealloc"));
	EXPECT(st.st_size == RESV && st.st_blocks * 512 >= RESV, "the other mount: size %lld blocks %lld",
	       (long long)st.st_size, (long long)st.st_blocks);
	st = st_of(at(fs.mnt2, "keep"));
	EXPECT(st.st_blocks * 512 >= KEEP, "the other mount: KEEP_SIZE file has %lld blocks",
	       (long long)st.st_blocks);

	/* another file fills the disk, 1 MiB at a time and each written back
	 * before the next: the store refuses new space at its full ratio, and
	 * writeback already admitted may carry it past that only by what is in
	 * flight, which must stay below the failsafe ratio up to which the
	 * reserved ranges take their writes (four 4 MiB objects in flight took
	 * this 64 MiB disk from 83% to 97%, past it) */
	ff = open(at(fs.mnt, "filler"), O_CREAT | O_WRONLY, 0644);
	EXPECT(ff >= 0, "create filler: %s", strerror(errno));
	for (off_t off = 0; off < 128 * MiB && !err; off += MiB) {
		where = "write";
		err = pwrite_pat(ff, off, MiB, 3);
		if (!err && fsync(ff) < 0) {
			err = errno;
			where = "fsync";
		}
	}
	if (!err && fsync(ff) < 0) {
		err = errno;
		where = "fsync";
	}
	EXPECT(err == ENOSPC, "filling the disk ended with '%s' at %s, not ENOSPC", strerror(err), where);
	close(ff);
	/* what a big write was refused still takes smaller ones: fill that too
	 * (appended to the same file: new objects, not reserved) */
	err = 0;
	ff = open(at(fs.mnt, "filler"), O_WRONLY | O_APPEND);
	EXPECT(ff >= 0, "open filler: %s", strerror(errno));
	for (int i = 0; i < 512 && !err; i++) {
		where = "write";
		err = pwrite_pat(ff, 0, 256 * KiB, 5);
		if (!err && fsync(ff) < 0) {
			err = errno;
			where = "fsync";
		}
	}
	close(ff);
	EXPECT(err == ENOSPC, "filling up with 256 KiB appends ended with '%s' at %s, not ENOSPC", strerror(err), where);

	/* the fallocated ranges still take their writes */
	err = pwrite_pat(fd, 0, RESV, 1);
	EXPECT(err == 0, "writing the 2 MiB fallocated on a full disk: %s", strerror(err));
	EXPECT(fsync(fd) == 0, "fsync of the fallocated file on a full disk: %s", strerror(errno));
	err = pwrite_pat(fd2, 0, KEEP, 2);
	EXPECT(err == 0, "writing the 1 MiB fallocated with KEEP_SIZE on a full disk: %s", strerror(err));
	EXPECT(fsync(fd2) == 0, "fsync of the KEEP_SIZE file on a full disk: %s", strerror(errno));
	EXPECT(close(fd) == 0 && close(fd2) == 0, "close: %s", strerror(errno));
	/* still full: a write that needs new space fails (the create already, or its data) */
	ff = open(at(fs.mnt, "after"), O_CREAT | O_WRONLY, 0644);
	err = ff < 0 ? errno : pwrite_pat(ff, 0, MiB, 4);
	if (ff >= 0 && !err && fsync(ff) < 0)
		err = errno;
	if (ff >= 0)
		close(ff);
	EXPECT(err == ENOSPC, "a write of new data after them: '%s', the disk is not full any more", strerror(err));
	EXPECT(lfs_check_file(at(fs.mnt2, "prealloc"), RESV, 1) == 0, "prealloc read back on the other mount");
	EXPECT(lfs_check_file(at(fs.mnt2, "keep"), KEEP, 2) == 0, "keep read back on the other mount");
}
END_TEST

/* ---- item 12: st_blocks is what is stored --------------------------------- */

struct blk_case {
	const char *name;
	off_t size;
	long long lo, hi;   /* st_blocks * 512 must lie in [lo, hi] */
};

static void expect_blocks(const char *mnt, const struct blk_case *k)
{
	struct stat st = st_of(at(mnt, k->name));
	long long b = (long long)st.st_blocks * 512;

	EXPECT(st.st_size == k->size, "%s/%s: size %lld, want %lld", mnt, k->name, (long long)st.st_size,
	       (long long)k->size);
	EXPECT(b >= k->lo && b <= k->hi, "%s/%s: st_blocks is %lld KiB, want %lld..%lld KiB (size %lld)", mnt,
	       k->name, b / KiB, k->lo / KiB, k->hi / KiB, (long long)st.st_size);
}

START_TEST(test_blocks)
{
	struct blk_case k[] = {
		{ "sparse", 1600 * KiB + 50 * KiB, 50 * KiB, 60 * KiB },
		{ "seek", GiB, 4 * KiB, 8 * KiB },
		{ "dd", 100 * MiB, 1, 8 * KiB },
		{ "full", 5 * MiB + 123, 5 * MiB + 123, 5 * MiB + 8 * KiB },
	};
	enum { SPARSE, SEEK, DD, FULL, N };
	int fd;

	/* one 50 KiB write at 1.6 MiB: du right away, before any fsync */
	fd = open(at(fs.mnt, "sparse"), O_CREAT | O_WRONLY, 0644);
	EXPECT(fd >= 0, "create: %s", strerror(errno));
	EXPECT(pwrite_pat(fd, 1600 * KiB, 50 * KiB, 1) == 0, "write");
	expect_blocks(fs.mnt, &k[SPARSE]);
	EXPECT(fsync(fd) == 0 && close(fd) == 0, "fsync, close: %s", strerror(errno));
	expect_blocks(fs.mnt, &k[SPARSE]);

	/* truncate to 1 GiB, 4 KiB at its end */
	fd = open(at(fs.mnt, "seek"), O_CREAT | O_WRONLY, 0644);
	EXPECT(fd >= 0 && ftruncate(fd, GiB) == 0, "create, truncate: %s", strerror(errno));
	EXPECT(pwrite_pat(fd, GiB - 4 * KiB, 4 * KiB, 2) == 0, "write");
	EXPECT(fsync(fd) == 0 && close(fd) == 0, "fsync, close: %s", strerror(errno));

	/* what dd seek= does: truncate to 100 MiB, one byte at the end */
	fd = open(at(fs.mnt, "dd"), O_CREAT | O_WRONLY, 0644);
	EXPECT(fd >= 0 && ftruncate(fd, 100 * MiB) == 0, "create, truncate: %s", strerror(errno));
	EXPECT(pwrite(fd, "x", 1, 100 * MiB - 1) == 1, "write: %s", strerror(errno));
	EXPECT(fsync(fd) == 0 && close(fd) == 0, "fsync, close: %s", strerror(errno));

	/* end to end */
	EXPECT(lfs_write_file(at(fs.mnt, "full"), 5 * MiB + 123, 3) == 0, "write full");
	fd = open(at(fs.mnt, "full"), O_RDONLY);
	EXPECT(fd >= 0 && fsync(fd) == 0 && close(fd) == 0, "fsync full: %s", strerror(errno));

	for (int i = 0; i < N; i++) {
		expect_blocks(fs.mnt, &k[i]);
		expect_blocks(fs.mnt2, &k[i]);   /* the other client sees what the MDS keeps */
	}

	/* a hole punched in the middle gives its blocks back, on both mounts */
	fd = open(at(fs.mnt, "full"), O_WRONLY);
	EXPECT(fd >= 0, "open full: %s", strerror(errno));
	EXPECT(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, MiB, MiB) == 0, "punch: %s",
	       strerror(errno));
	EXPECT(close(fd) == 0, "close");
	k[FULL].lo -= MiB;
	k[FULL].hi -= MiB;
	expect_blocks(fs.mnt, &k[FULL]);
	expect_blocks(fs.mnt2, &k[FULL]);
	/* and so does a truncate: [0, 1 MiB) and [2 MiB, 3 MiB) are left */
	EXPECT(truncate(at(fs.mnt2, "full"), 3 * MiB) == 0, "truncate: %s", strerror(errno));
	k[FULL] = (struct blk_case){ "full", 3 * MiB, 2 * MiB, 2 * MiB };
	expect_blocks(fs.mnt, &k[FULL]);
	expect_blocks(fs.mnt2, &k[FULL]);
	EXPECT_RANGE(at(fs.mnt2, "full"), 0, MiB, 3, 0, false);
	EXPECT_RANGE(at(fs.mnt2, "full"), MiB, MiB, 0, 0, true);
	EXPECT_RANGE(at(fs.mnt2, "full"), 2 * MiB, MiB, 3, 0, false);

	/* it is the MDS's (journaled), not a client's memory */
	EXPECT(lfs_umount2(&fs) == 0 && lfs_umount(&fs) == 0, "unmount");
	lfs_mds_stop(&fs, SIGTERM);
	EXPECT(lfs_mds_start(&fs) == 0 && lfs_mount(&fs, "allow_other") == 0, "restart and remount");
	for (int i = 0; i < N; i++)
		expect_blocks(fs.mnt, &k[i]);
}
END_TEST

/* ---- lseek SEEK_DATA / SEEK_HOLE ----------------------------------------- */

#define ALIGN (4 * KiB)   /* MDSP_EXT_ALIGN: the granule the MDS keeps extents in */

/* lseek(@fd, @off, @whence) is in [@lo, @hi] */
#define EXPECT_SEEK(fd, off, whence, lo, hi, what)                                                      \
	do {                                                                                            \
		off_t p_ = lseek((fd), (off), (whence));                                               \
		EXPECT(p_ >= (off_t)(lo) && p_ <= (off_t)(hi), "%s: lseek(%lld, %s) is %lld%s%s, want %lld..%lld", \
		       what, (long long)(off), (whence) == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE", (long long)p_, \
		       p_ < 0 ? ": " : "", p_ < 0 ? strerror(errno) : "", (long long)(lo), (long long)(hi)); \
	} while (0)

/* what cp --sparse, tar -S and qemu-img ask of the sparse file: 50 KiB at 1.6 MiB of 3 MiB */
static void expect_sparse_seeks(int fd, const char *what)
{
	/* the data is where it was written, within the MDS's 4 KiB granules */
	EXPECT_SEEK(fd, 0, SEEK_DATA, 1600 * KiB / ALIGN * ALIGN, 1600 * KiB, what);
	EXPECT_SEEK(fd, 0, SEEK_HOLE, 0, 0, what);
	EXPECT_SEEK(fd, 1610 * KiB, SEEK_DATA, 1610 * KiB, 1610 * KiB, what);
	EXPECT_SEEK(fd, 1600 * KiB, SEEK_HOLE, 1650 * KiB, (1650 * KiB + ALIGN - 1) / ALIGN * ALIGN, what);
	/* past it the rest is hole, to the implicit one at the end */
	EXPECT_ERR(lseek(fd, 1652 * KiB, SEEK_DATA), ENXIO, what);
	EXPECT_SEEK(fd, 2 * MiB, SEEK_HOLE, 2 * MiB, 2 * MiB, what);
	EXPECT_SEEK(fd, 3 * MiB - 1, SEEK_HOLE, 3 * MiB - 1, 3 * MiB - 1, what);
	EXPECT_ERR(lseek(fd, 3 * MiB, SEEK_DATA), ENXIO, what);
	EXPECT_ERR(lseek(fd, 3 * MiB, SEEK_HOLE), ENXIO, what);
	EXPECT_ERR(lseek(fd, 5 * MiB, SEEK_HOLE), ENXIO, what);
}

START_TEST(test_seek_data_hole)
{
	char *cp[] = { "/bin/cp", "--sparse=auto", NULL, NULL, NULL };
	struct stat st;
	int fd, fd2;

	/* 50 KiB at 1.6 MiB of a 3 MiB file, asked on the writing handle
	 * before any fsync: the lseek itself makes the MDS's view current */
	fd = open(at(fs.mnt, "sparse"), O_CREAT | O_RDWR, 0644);
	EXPECT(fd >= 0, "create: %s", strerror(errno));
	EXPECT(pwrite_pat(fd, 1600 * KiB, 50 * KiB, 1) == 0, "write");
	EXPECT(ftruncate(fd, 3 * MiB) == 0, "truncate: %s", strerror(errno));
	expect_sparse_seeks(fd, "writer");

	/* another client that opens it sees what the writer buffered (the
	 * open and the lseek take its buffer caps: it writes back and flushes
	 * its extents first), without an fsync or a close */
	fd2 = open(at(fs.mnt2, "sparse"), O_RDONLY);
	EXPECT(fd2 >= 0, "open on mount 2: %s", strerror(errno));
	expect_sparse_seeks(fd2, "mount 2");
	EXPECT(close(fd2) == 0, "close");

	/* a second write on mount 1 while nothing else has it open, fsync'd:
	 * mount 2 sees both ranges */
	EXPECT(pwrite_pat(fd, 2 * MiB + 100, 100, 4) == 0, "write");
	EXPECT(fsync(fd) == 0, "fsync: %s", strerror(errno));
	fd2 = open(at(fs.mnt2, "sparse"), O_RDONLY);
	EXPECT(fd2 >= 0, "open on mount 2: %s", strerror(errno));
	EXPECT_SEEK(fd2, 1652 * KiB, SEEK_DATA, 2 * MiB, 2 * MiB, "mount 2, second write");
	EXPECT_SEEK(fd2, 2 * MiB, SEEK_HOLE, 2 * MiB + ALIGN, 2 * MiB + ALIGN, "mount 2, second write");
	EXPECT(close(fd2) == 0, "close");
	EXPECT(close(fd) == 0, "close");

	/* cp --sparse=auto copies only the data (coreutils asks SEEK_DATA): the
	 * copy holds what the source does, and as few blocks */
	cp[2] = (char *)at(fs.mnt, "sparse");
	cp[3] = (char *)at(fs.mnt, "copy");
	EXPECT(lfs_run(cp, 60000, NULL) == 0, "cp --sparse=auto failed");
	/* counted where the MDS keeps it, the other mount's stat, and on the
	 * copying mount (whose stat showed 112 KiB here, its writes counted
	 * twice: cp's ftruncate was answered with the MDS's count, which had
	 * the extents of the flush still in flight, and the kernel cached it) */
	fd = open(at(fs.mnt, "copy"), O_RDONLY);
	EXPECT(fd >= 0 && fsync(fd) == 0 && close(fd) == 0, "fsync copy: %s", strerror(errno));
	for (int m = 0; m < 2; m++) {
		st = st_of(at(m ? fs.mnt : fs.mnt2, "copy"));
		EXPECT(st.st_size == 3 * MiB && st.st_blocks * 512 >= 54 * KiB && st.st_blocks * 512 <= 64 * KiB,
		       "copy on mount %d: size %lld, %lld KiB stored, want 54..64", 2 - m, (long long)st.st_size,
		       (long long)st.st_blocks / 2);
	}
	EXPECT_RANGE(at(fs.mnt, "copy"), 0, 1600 * KiB, 0, 0, true);
	EXPECT_RANGE(at(fs.mnt, "copy"), 1600 * KiB, 50 * KiB, 1, 0, false);
	fd = open(at(fs.mnt2, "copy"), O_RDONLY);
	EXPECT(fd >= 0, "open copy: %s", strerror(errno));
	EXPECT_SEEK(fd, 0, SEEK_DATA, 1600 * KiB / ALIGN * ALIGN, 1600 * KiB, "copy");
	EXPECT(close(fd) == 0, "close");

	/* a file written end to end is data up to its size, then the
	 * implicit hole at the end */
	EXPECT(lfs_write_file(at(fs.mnt, "full"), 5 * MiB + 123, 3) == 0, "write full");
	fd = open(at(fs.mnt, "full"), O_RDWR);
	EXPECT(fd >= 0, "open full: %s", strerror(errno));
	EXPECT_SEEK(fd, 0, SEEK_DATA, 0, 0, "full");
	EXPECT_SEEK(fd, 0, SEEK_HOLE, 5 * MiB + 123, 5 * MiB + 123, "full");
	EXPECT_SEEK(fd, 5 * MiB + 122, SEEK_DATA, 5 * MiB + 122, 5 * MiB + 122, "full");
	EXPECT_ERR(lseek(fd, 5 * MiB + 123, SEEK_DATA), ENXIO, "full: SEEK_DATA at the size");
	EXPECT_ERR(lseek(fd, 5 * MiB + 123, SEEK_HOLE), ENXIO, "full: SEEK_HOLE at the size");
	/* SEEK_SET and SEEK_END are the kernel's, and still right */
	EXPECT(lseek(fd, 0, SEEK_END) == 5 * MiB + 123 && lseek(fd, 7, SEEK_SET) == 7, "SEEK_END, SEEK_SET");

	/* a punched hole is a hole, on both mounts */
	EXPECT(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, MiB, MiB) == 0, "punch: %s",
	       strerror(errno));
	EXPECT_SEEK(fd, 0, SEEK_HOLE, MiB, MiB, "punched");
	EXPECT_SEEK(fd, MiB, SEEK_DATA, 2 * MiB, 2 * MiB, "punched");
	EXPECT_SEEK(fd, 2 * MiB, SEEK_HOLE, 5 * MiB + 123, 5 * MiB + 123, "punched");
	fd2 = open(at(fs.mnt2, "full"), O_RDONLY);
	EXPECT(fd2 >= 0, "open full on mount 2: %s", strerror(errno));
	EXPECT_SEEK(fd2, 0, SEEK_HOLE, MiB, MiB, "punched, mount 2");
	EXPECT_SEEK(fd2, MiB + 5, SEEK_DATA, 2 * MiB, 2 * MiB, "punched, mount 2");
	EXPECT(close(fd2) == 0 && close(fd) == 0, "close");

	/* an empty file has neither */
	fd = open(at(fs.mnt, "empty"), O_CREAT | O_RDWR, 0644);
	EXPECT(fd >= 0, "create empty: %s", strerror(errno));
	EXPECT_ERR(lseek(fd, 0, SEEK_DATA), ENXIO, "empty: SEEK_DATA");
	EXPECT_ERR(lseek(fd, 0, SEEK_HOLE), ENXIO, "empty: SEEK_HOLE");
	EXPECT(close(fd) == 0, "close");
}
END_TEST

/* ---- item 13: fallocate modes ------------------------------------------- */

START_TEST(test_zero_range)
{
	struct stat st;
	int fd;

	EXPECT(lfs_write_file(at(fs.mnt, "z"), 3 * MiB, 5) == 0, "write");
	fd = open(at(fs.mnt, "z"), O_RDWR);
	EXPECT(fd >= 0, "open: %s", strerror(errno));
	/* inside: zeros there, the rest untouched, the size as it was */
	EXPECT(fallocate(fd, FALLOC_FL_ZERO_RANGE, MiB - 100, MiB + 200) == 0, "ZERO_RANGE: %s", strerror(errno));
	EXPECT(fstat(fd, &st) == 0 && st.st_size == 3 * MiB, "size %lld after ZERO_RANGE inside",
	       (long long)st.st_size);
	/* past the end: the size grows to its end; with KEEP_SIZE it does not */
	EXPECT(fallocate(fd, FALLOC_FL_ZERO_RANGE, 3 * MiB - 10, MiB + 10) == 0, "ZERO_RANGE past the end: %s",
	       strerror(errno));
	EXPECT(fstat(fd, &st) == 0 && st.st_size == 4 * MiB, "size %lld after ZERO_RANGE to 4 MiB",
	       (long long)st.st_size);
	EXPECT(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 4 * MiB, MiB) == 0,
	       "ZERO_RANGE|KEEP_SIZE: %s", strerror(errno));
	EXPECT(fstat(fd, &st) == 0 && st.st_size == 4 * MiB, "size %lld after ZERO_RANGE|KEEP_SIZE",
	       (long long)st.st_size);
	EXPECT(close(fd) == 0, "close");
	for (int m = 0; m < 2; m++) {
		const char *p = at(m ? fs.mnt2 : fs.mnt, "z");

		EXPECT(st_of(p).st_size == 4 * MiB, "%s: size", p);
		EXPECT_RANGE(p, 0, MiB - 100, 5, 0, false);
		EXPECT_RANGE(p, MiB - 100, MiB + 200, 0, 0, true);
		EXPECT_RANGE(p, 2 * MiB + 100, MiB - 110, 5, 0, false);
		EXPECT_RANGE(p, 3 * MiB - 10, MiB + 10, 0, 0, true);
	}
}
END_TEST

/* ---- item 13: chattr +i / +a --------------------------------------------- */

static int get_flags(const char *path, int *flags)
{
	int fd = open(path, O_RDONLY), r;

	if (fd < 0)
		return -errno;
	r = ioctl(fd, FS_IOC_GETFLAGS, flags) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static int set_flags(const char *path, int flags)
{
	int fd = open(path, O_RDONLY), r;

	if (fd < 0)
		return -errno;
	r = ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static void expect_flags(const char *path, int want)
{
	int flags = 0, r = get_flags(path, &flags);

	EXPECT(r == 0, "FS_IOC_GETFLAGS of %s: %s", path, strerror(-r));
	EXPECT((flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)) == want, "%s: flags 0x%x, want 0x%x", path, flags, want);
}

/* what no one may do to an immutable or append-only file at @mnt/@rel */
static void expect_locked(const char *mnt, const char *rel, bool immutable)
{
	const char *p = at(mnt, rel);
	struct timeval tv[2] = { { 1000, 0 }, { 1000, 0 } };

	EXPECT_ERR(open(p, O_WRONLY), EPERM, "open for writing");
	EXPECT_ERR(open(p, O_RDWR | O_TRUNC), EPERM, "open with O_TRUNC");
	EXPECT_ERR(truncate(p, 1), EPERM, "truncate");
	EXPECT_ERR(unlink(p), EPERM, "unlink");
	EXPECT_ERR(rename(p, at(mnt, "renamed")), EPERM, "rename");
	EXPECT_ERR(link(p, at(mnt, "linked")), EPERM, "link");
	EXPECT_ERR(chmod(p, 0600), EPERM, "chmod");
	EXPECT_ERR(chown(p, 1, 1), EPERM, "chown");
	EXPECT_ERR(utimes(p, tv), EPERM, "utimes");
	EXPECT_ERR(setxattr(p, "user.x", "1", 1, 0), EPERM, "setxattr");
	if (immutable)
		EXPECT_ERR(open(p, O_WRONLY | O_APPEND), EPERM, "open for appending");
	EXPECT(access(at(mnt, "renamed"), F_OK) < 0 && access(at(mnt, "linked"), F_OK) < 0, "a name was made");
}

START_TEST(test_chattr)
{
	int fd, old;
	char buf[64];

	EXPECT(lfs_write_file(at(fs.mnt, "imm"), 1000, 11) == 0, "write imm");
	expect_flags(at(fs.mnt, "imm"), 0);
	old = open(at(fs.mnt, "imm"), O_WRONLY);   /* opened before: writes through it stop too */
	EXPECT(old >= 0, "open: %s", strerror(errno));
	EXPECT(set_flags(at(fs.mnt, "imm"), FS_IMMUTABLE_FL) == 0, "chattr +i");
	expect_flags(at(fs.mnt, "imm"), FS_IMMUTABLE_FL);
	expect_flags(at(fs.mnt2, "imm"), FS_IMMUTABLE_FL);   /* lsattr on the other mount */
	expect_locked(fs.mnt, "imm", true);
	expect_locked(fs.mnt2, "imm", true);
	EXPECT_ERR(pwrite(old, "x", 1, 0), EPERM, "write through a handle opened before +i");
	EXPECT_ERR(ftruncate(old, 0), EPERM, "ftruncate through a handle opened before +i");
	EXPECT_ERR(fallocate(old, 0, 0, 4096), EPERM, "fallocate through a handle opened before +i");
	close(old);
	EXPECT(lfs_check_file(at(fs.mnt2, "imm"), 1000, 11) == 0, "imm is intact");

	/* append-only: only O_APPEND writes */
	EXPECT(lfs_write_file(at(fs.mnt, "app"), 10, 12) == 0, "write app");
	EXPECT(set_flags(at(fs.mnt2, "app"), FS_APPEND_FL) == 0, "chattr +a on the other mount");
	expect_flags(at(fs.mnt, "app"), FS_APPEND_FL);
	expect_locked(fs.mnt, "app", false);
	expect_locked(fs.mnt2, "app", false);
	for (int m = 0; m < 2; m++) {
		fd = open(at(m ? fs.mnt2 : fs.mnt, "app"), O_WRONLY | O_APPEND);
		EXPECT(fd >= 0, "open O_APPEND of an append-only file: %s", strerror(errno));
		EXPECT(write(fd, m ? "BB" : "AA", 2) == 2, "append: %s", strerror(errno));
		EXPECT_ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4), EPERM,
			   "punching a hole in an append-only file");
		EXPECT(fsync(fd) == 0 && close(fd) == 0, "fsync, close: %s", strerror(errno));
	}
	fd = open(at(fs.mnt2, "app"), O_RDONLY);
	EXPECT(fd >= 0 && pread(fd, buf, sizeof(buf), 0) == 14, "app is 14 bytes");
	close(fd);
	EXPECT(memcmp(buf + 10, "AABB", 4) == 0, "the appends are at the end: '%.4s'", buf + 10);

	/* both flags are the inode's: an MDS restart keeps them */
	EXPECT(lfs_umount2(&fs) == 0 && lfs_umount(&fs) == 0, "unmount");
	lfs_mds_stop(&fs, SIGTERM);
	EXPECT(lfs_mds_start(&fs) == 0 && lfs_mount(&fs, "allow_other") == 0, "restart and remount");
	expect_flags(at(fs.mnt, "imm"), FS_IMMUTABLE_FL);
	expect_flags(at(fs.mnt, "app"), FS_APPEND_FL);
	expect_locked(fs.mnt, "imm", true);
	/* cleared, the file is an ordinary one again */
	EXPECT(set_flags(at(fs.mnt, "imm"), 0) == 0, "chattr -i");
	expect_flags(at(fs.mnt, "imm"), 0);
	EXPECT(truncate(at(fs.mnt, "imm"), 1) == 0, "truncate after -i: %s", strerror(errno));
	EXPECT(unlink(at(fs.mnt, "imm")) == 0, "unlink after -i: %s", strerror(errno));
}
END_TEST

/* ---- item 11: O_DIRECT writes and the page cache --------------------------- */

#define DW_SIZE (640 * KiB)
#define DW_IOCBS 10
#define DW_PASSES 300

static long io_setup_(unsigned nr, aio_context_t *ctx) { return syscall(SYS_io_setup, nr, ctx); }
static long io_destroy_(aio_context_t ctx) { return syscall(SYS_io_destroy, ctx); }
static long io_submit_(aio_context_t ctx, long n, struct iocb **v) { return syscall(SYS_io_submit, ctx, n, v); }
static long io_getevents_(aio_context_t ctx, long min, long max, struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
}

/* the byte at @off of pass @pass: the pass number in every byte, mixed with the offset */
static unsigned char dw_byte(unsigned pass, off_t off)
{
	return (unsigned char)(pass * 7 + (unsigned)(off >> 12));
}

/* a buffered reader: reads the whole file over and over until killed */
static void dw_reader(const char *path)
{
	static char buf[DW_SIZE];
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a failed case leaves no reader behind */
	fd = open(path, O_RDONLY);

	if (fd < 0)
		_exit(1);
	for (;;)
		if (pread(fd, buf, sizeof(buf), 0) < 0)
			_exit(2);
}

START_TEST(test_direct_write)
{
	const char *p = at(fs.mnt, "dw");
	pid_t readers[2];
	unsigned char *wbuf, *rbuf;
	aio_context_t ctx = 0;
	int dfd, bfd, stale = 0;
	char first[256] = "";

	EXPECT(lfs_write_file(p, DW_SIZE, 1) == 0, "write dw");
	dfd = open(p, O_RDWR | O_DIRECT);
	EXPECT(dfd >= 0, "open O_DIRECT: %s", strerror(errno));
	bfd = open(p, O_RDONLY);   /* the writer's read-back: through the page cache */
	EXPECT(bfd >= 0, "open: %s", strerror(errno));
	EXPECT(posix_memalign((void **)&wbuf, 4096, DW_SIZE) == 0 && (rbuf = malloc(DW_SIZE)), "memory");
	EXPECT(io_setup_(DW_IOCBS, &ctx) == 0, "io_setup: %s", strerror(errno));
	for (int i = 0; i < 2; i++) {
		readers[i] = fork();
		EXPECT(readers[i] >= 0, "fork");
		if (readers[i] == 0)
			dw_reader(p);
	}
	for (unsigned pass = 1; pass <= DW_PASSES; pass++) {
		struct iocb cb[DW_IOCBS], *cbp[DW_IOCBS];
		struct io_event ev[DW_IOCBS];
		long got = 0;

		for (off_t o = 0; o < DW_SIZE; o++)
			wbuf[o] = dw_byte(pass, o);
		for (int i = 0; i < DW_IOCBS; i++) {
			memset(&cb[i], 0, sizeof(cb[i]));
			cb[i].aio_fildes = (uint32_t)dfd;
			cb[i].aio_lio_opcode = IOCB_CMD_PWRITE;
			cb[i].aio_buf = (uint64_t)(uintptr_t)(wbuf + i * (DW_SIZE / DW_IOCBS));
			cb[i].aio_nbytes = DW_SIZE / DW_IOCBS;
			cb[i].aio_offset = i * (DW_SIZE / DW_IOCBS);
			cbp[i] = &cb[i];
		}
		EXPECT(io_submit_(ctx, DW_IOCBS, cbp) == DW_IOCBS, "io_submit: %s", strerror(errno));
		while (got < DW_IOCBS) {
			long n = io_getevents_(ctx, 1, DW_IOCBS - got, ev);

			EXPECT(n > 0 || errno == EINTR, "io_getevents: %s", strerror(errno));
			for (long i = 0; i < n; i++)
				EXPECT((long long)ev[i].res == DW_SIZE / DW_IOCBS, "pass %u: a direct write returned %lld",
				       pass, (long long)ev[i].res);
			got += n > 0 ? n : 0;
		}
		/* every write of the pass completed: a read now sees this pass */
		EXPECT(pread(bfd, rbuf, DW_SIZE, 0) == DW_SIZE, "read back: %s", strerror(errno));
		for (off_t o = 0; o < DW_SIZE; o++)
			if (rbuf[o] != dw_byte(pass, o)) {
				if (!stale++)
					snprintf(first, sizeof(first), "pass %u: byte %lld is 0x%02x, want 0x%02x "
						 "(the pass before wrote 0x%02x)", pass, (long long)o, rbuf[o],
						 dw_byte(pass, o), dw_byte(pass - 1, o));
				break;
			}
	}
	for (int i = 0; i < 2; i++) {
		kill(readers[i], SIGKILL);
		waitpid(readers[i], NULL, 0);
	}
	io_destroy_(ctx);
	close(bfd);
	close(dfd);
	free(wbuf);
	free(rbuf);
	EXPECT(stale == 0, "%d of %d read-backs after a completed O_DIRECT write were stale; first: %s", stale,
	       DW_PASSES, first);
}
END_TEST

/*
 * On RADOS nothing can be reserved: fallocate modes 0 and KEEP_SIZE say
 * EOPNOTSUPP, as Ceph's kernel client (the old success promised nothing),
 * and glibc's posix_fallocate writes the range itself then: the file has
 * the size and the blocks after it.
 */
START_TEST(test_fallocate_rados)
{
	struct stat st;
	int fd = open(at(fs.mnt, "falloc"), O_CREAT | O_RDWR, 0644);

	EXPECT(fd >= 0, "create: %s", strerror(errno));
	EXPECT_ERR(fallocate(fd, 0, 0, MiB), EOPNOTSUPP, "fallocate mode 0 on RADOS");
	EXPECT_ERR(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, MiB), EOPNOTSUPP, "fallocate KEEP_SIZE on RADOS");
	EXPECT(posix_fallocate(fd, 0, MiB) == 0, "posix_fallocate (glibc writes it)");
	EXPECT(fsync(fd) == 0 && fstat(fd, &st) == 0, "fsync, fstat: %s", strerror(errno));
	EXPECT(st.st_size == MiB && st.st_blocks * 512 >= MiB, "after posix_fallocate: size %lld, %lld KiB stored",
	       (long long)st.st_size, (long long)st.st_blocks / 2);
	EXPECT(close(fd) == 0, "close");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fuse_space");

	/* a small local disk of its own; RADOS reserves nothing (fallocate
	 * mode 0 is EOPNOTSUPP there: fallocate_rados) */
	if (!lfs_rados())
		lfs_suite_add(s, "fallocate_reserves", test_fallocate_reserves, setup_disk, teardown_disk, 180);
	else
		lfs_suite_add(s, "fallocate_rados", test_fallocate_rados, setup, teardown, 60);
	lfs_suite_add(s, "blocks", test_blocks, setup, teardown, 120);
	lfs_suite_add(s, "seek_data_hole", test_seek_data_hole, setup, teardown, 120);
	lfs_suite_add(s, "zero_range", test_zero_range, setup, teardown, 120);
	lfs_suite_add(s, "chattr", test_chattr, setup, teardown, 120);
	lfs_suite_add(s, "direct_write", test_direct_write, setup, teardown, 180);
	return s;
}

int main(void)
{
	return lfs_suite_main(suite(), "test_fuse_space");
}
