/* fsio.h -- private to the store room: the one door to the OS for the
 * store's file operations (copy, reserve, fsync/fdatasync, rename, link,
 * unlink, the creating opens, mkdir/rmdir of the segment directory, directory sync, the
 * journal's writes and truncates). Every call goes through a
 * test seam (SQLite's VFS / test6.c): DYNSWEEP_TEST_FSFAIL=op:N[:errno]
 * makes the Nth call of op (counted from 1 in this process) fail as the OS
 * would, with errno (a number or a name: EIO, ENOSPC, EDQUOT, EFBIG, EROFS;
 * default EIO, ENOSPC for reserve), so the store's own error paths run.
 * ops: copy reserve fsync jsync rename link unlink syncdir write truncate
 * mkdir rmdir create.
 * See docs/store.md, "Testing the failures: the file door". */
#ifndef DYNSWEEP_STORE_FSIO_H
#define DYNSWEEP_STORE_FSIO_H
#include <sys/types.h>
#include <sys/uio.h>

enum ds_fs_op {
  DS_FS_COPY,
  DS_FS_RESERVE,
  DS_FS_FSYNC, /* fsync of a written file: STORE.tmp, segment and block files */
  DS_FS_JSYNC, /* the journal's syncs: group commit, explicit sync, reset */
  DS_FS_RENAME,
  DS_FS_LINK,
  DS_FS_UNLINK,
  DS_FS_SYNCDIR,
  DS_FS_WRITE,    /* the journal's record and header writes */
  DS_FS_TRUNCATE, /* the journal's truncates: reset, torn tail */
  DS_FS_MKDIR,    /* the segment directory */
  DS_FS_RMDIR,
  DS_FS_CREATE,   /* open with O_CREAT: STORE.tmp, segment and block files, the journal */
  DS_FS_NOPS
};

/* The seam: 0, or the errno the current call of op fails with. */
int ds_fs_fault(enum ds_fs_op op);

/* Copies src to dst (created or truncated): a reflink where the file system
 * has them, else copy_file_range, else read/write. DS_OK or DS_EIO recorded
 * ("cannot copy SRC to DST: ..."). */
int ds_fs_copy(const char *src, const char *dst);
/* Claims bytes of disk for path before HDF5 writes (HDF5 1.10 cannot recover
 * from a failed write at close); reports a too small ulimit -f or a full
 * file system. DS_OK or DS_EIO recorded. */
int ds_fs_reserve(const char *path, double bytes);
/* fsync of a closed file (after giving back the space ds_fs_reserve claimed
 * past its end); 0, or -1 with errno set. */
int ds_fs_fsync_path(const char *path);
/* The journal's fd: fsync (full) or fdatasync; 0, or -1 with errno set. */
int ds_fs_jsync(int fd, int full);
/* rename(2), link(2), unlink(2); 0, or -1 with errno set. */
int ds_fs_rename(const char *from, const char *to);
int ds_fs_link(const char *from, const char *to);
int ds_fs_unlink(const char *path);
/* open(2) with O_CREAT | O_CLOEXEC | flags, mode 0644; the fd, or -1 with
 * errno set. */
int ds_fs_create(const char *path, int flags);
/* mkdir(2) (mode 0755), rmdir(2); 0, or -1 with errno set. */
int ds_fs_mkdir(const char *path);
int ds_fs_rmdir(const char *path);
/* fsync of a directory (best effort: a rename or new file in it becomes
 * durable); of path's parent directory. */
void ds_fs_sync_dir(const char *dir);
void ds_fs_sync_parent(const char *path);
/* pwritev(2) / pwrite(2) of the journal; as they, -1 with errno set. */
ssize_t ds_fs_pwritev(int fd, const struct iovec *v, int n, off_t off);
ssize_t ds_fs_pwrite(int fd, const void *buf, size_t n, off_t off);
/* ftruncate(2) of the journal; 0, or -1 with errno set. */
int ds_fs_ftruncate(int fd, off_t len);
#endif
