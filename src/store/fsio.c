/* fsio.c -- the store's one door to the OS (fsio.h): every copy, reserve,
 * fsync, rename, link, unlink, create, mkdir, rmdir, directory sync and journal
 * write or truncate of the store
 * goes through here, and through the test seam ds_fs_fault, which fails the
 * Nth call of one op on purpose (SQLite's test6.c fails the Nth sync the
 * same way). Without DYNSWEEP_TEST_FSFAIL the seam is one load and a branch. */
#include "fsio.h"

#include "dynsweep/knobs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dynsweep/util.h"

/* ---- the seam ----------------------------------------------------------------- */

static const char *const ds_fs_names[DS_FS_NOPS] = {"copy",  "reserve", "fsync", "jsync",
                                                     "rename", "link",   "unlink", "syncdir",
                                                     "write", "truncate", "mkdir", "rmdir",
                                                     "create"};
static struct {
  int op;      /* -1: no fault asked for */
  long nth;    /* the call of op that fails, from 1 */
  int err;     /* its errno */
  long calls;  /* calls of op so far (atomic: the journal's commit thread) */
} ds_fs_seam = {-1, 0, 0, 0};
static pthread_once_t ds_fs_once = PTHREAD_ONCE_INIT;

static int ds_fs_errno_named(const char *e) {
  static const struct { const char *name; int err; } t[] = {
      {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EFBIG", EFBIG},
      {"EROFS", EROFS}, {"EACCES", EACCES}, {"EXDEV", EXDEV}, {"EINTR", EINTR}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(e, t[i].name)) return t[i].err;
  int n = atoi(e);
  return n > 0 ? n : EIO;
}

/* The only read of the environment here: DYNSWEEP_TEST_FSFAIL=op:N[:errno]
 * (a spec it cannot parse asks for nothing, and says so once). */
static void ds_fs_seam_read(void) {
  const char *v = ds_knob_str(DS_KNOB_TEST_FSFAIL);
  if (!v || !v[0]) return;
  char op[16] = "", err[16] = "";
  long nth = 0;
  int k = sscanf(v, "%15[a-z]:%ld:%15[A-Z0-9]", op, &nth, err);
  for (int i = 0; k >= 2 && nth > 0 && i < DS_FS_NOPS; i++)
    if (!strcmp(op, ds_fs_names[i])) {
      ds_fs_seam.op = i;
      ds_fs_seam.nth = nth;
      ds_fs_seam.err = k == 3 ? ds_fs_errno_named(err) : i == DS_FS_RESERVE ? ENOSPC : EIO;
      return;
    }
  ds_warn("DYNSWEEP_TEST_FSFAIL='%s' is not op:N[:errno] (op one of copy reserve fsync jsync "
          "rename link unlink syncdir write truncate mkdir rmdir create, N >= 1): no fault injected", v);
}

int ds_fs_fault(enum ds_fs_op op) {
  pthread_once(&ds_fs_once, ds_fs_seam_read);
  if (ds_fs_seam.op != (int)op) return 0;
  long n = __atomic_add_fetch(&ds_fs_seam.calls, 1, __ATOMIC_RELAXED);
  return n == ds_fs_seam.nth ? ds_fs_seam.err : 0;
}

/* returns -1 with errno = the fault's when the seam fails this call */
#define DS_FS_SEAM(op)              \
  do {                              \
    int e_ = ds_fs_fault(op);       \
    if (e_) {                       \
      errno = e_;                   \
      return -1;                    \
    }                               \
  } while (0)

/* ---- copy, reserve -------------------------------------------------------------- */

int ds_fs_copy(const char *src, const char *dst) {
  int err = ds_fs_fault(DS_FS_COPY);
  if (err) return ds_fail(DS_EIO, "cannot copy %s to %s: %s", src, dst, strerror(err));
  int in = open(src, O_RDONLY | O_CLOEXEC), out = -1;
  struct stat st;
  if (in < 0 || fstat(in, &st) != 0) {
    err = errno;
    goto done;
  }
  out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    err = errno;
    goto done;
  }
  if (ioctl(out, FICLONE, in) == 0) goto done;
  off_t left = st.st_size;
  int use_cfr = 1;
  char *buf = NULL;
  while (left > 0) {
    ssize_t n;
    if (use_cfr) {
      n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
      if (n < 0 && (errno == ENOSYS || errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP)) {
        use_cfr = 0;
        if (lseek(in, st.st_size - left, SEEK_SET) < 0 || lseek(out, st.st_size - left, SEEK_SET) < 0) {
          err = errno;
          break;
        }
        continue;
      }
    } else {
      if (!buf && !(buf = malloc(1 << 20))) {
        err = ENOMEM;
        break;
      }
      n = read(in, buf, (size_t)(left < (1 << 20) ? left : (1 << 20)));
      for (ssize_t w = 0, k; n > 0 && w < n; w += k) {
        k = write(out, buf + w, (size_t)(n - w));
        if (k < 0 && errno == EINTR) k = 0;
        else if (k <= 0) {
          n = -1;
          if (k == 0) errno = ENOSPC;
          break;
        }
      }
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    left -= n;
  }
  free(buf);
done:
  if (in >= 0) close(in);
  if (out >= 0 && close(out) != 0 && !err) err = errno;
  if (err) return ds_fail(DS_EIO, "cannot copy %s to %s: %s", src, dst, strerror(err));
  return DS_OK;
}

/* HDF5 1.10 cannot recover from a failed write while it closes a file (the
 * library crashes when it terminates), so the space a publish needs is
 * claimed before HDF5 writes anything: bytes = a generous estimate of the
 * final file size. A file size limit (ulimit -f) that is too small and a
 * file system without room are reported here, cleanly. */
int ds_fs_reserve(const char *tmp, double bytes) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && bytes > (double)rl.rlim_cur)
    return ds_fail(DS_EIO, "%s: File too large: publishing needs about %.0f bytes but the file size "
                           "limit (ulimit -f) is %.0f bytes", tmp, bytes, (double)rl.rlim_cur);
  int fd = open(tmp, O_RDWR | O_CLOEXEC);
  if (fd < 0) return ds_fail(DS_EIO, "%s: cannot open: %s", tmp, strerror(errno));
  int rc = ds_fs_fault(DS_FS_RESERVE);
  if (!rc) rc = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)bytes) == 0 ? 0 : errno;
  close(fd);
  if (rc == ENOSPC || rc == EFBIG || rc == EDQUOT)
    return ds_fail(DS_EIO, "%s: %s: publishing needs about %.0f bytes", tmp, strerror(rc), bytes);
  if (rc) { /* no fallocate here (e.g. NFS): check the free space instead */
    struct statvfs vfs;
    char *d = ds_strdup(tmp);
    if (d && statvfs(dirname(d), &vfs) == 0 && (double)vfs.f_bavail * vfs.f_frsize < bytes) {
      free(d);
      return ds_fail(DS_EIO, "%s: %s: publishing needs about %.0f bytes", tmp, strerror(ENOSPC), bytes);
    }
    free(d);
  }
  return DS_OK;
}

/* ---- syncs ---------------------------------------------------------------------- */

/* First gives back the blocks ds_fs_reserve allocated past the end
 * (fallocate KEEP_SIZE space stays allocated until the file is truncated: a
 * finished 34.5 MB store took 55.5 MB of disk). */
int ds_fs_fsync_path(const char *path) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) == 0 && ftruncate(fd, st.st_size) != 0) { /* only space is lost */ }
  int err = ds_fs_fault(DS_FS_FSYNC);
  int rc = err ? -1 : fsync(fd);
  if (!err) err = errno;
  close(fd);
  errno = err;
  return rc;
}

int ds_fs_jsync(int fd, int full) {
  DS_FS_SEAM(DS_FS_JSYNC);
  return full ? fsync(fd) : fdatasync(fd);
}

void ds_fs_sync_dir(const char *dir) {
  if (ds_fs_fault(DS_FS_SYNCDIR)) return; /* best effort, as a failed one */
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    if (fsync(fd) != 0) { /* best effort */ }
    close(fd);
  }
}

void ds_fs_sync_parent(const char *path) {
  char *d = ds_strdup(path);
  if (!d) return;
  ds_fs_sync_dir(dirname(d));
  free(d);
}

/* ---- names ---------------------------------------------------------------------- */

int ds_fs_rename(const char *from, const char *to) {
  DS_FS_SEAM(DS_FS_RENAME);
  return rename(from, to);
}

int ds_fs_link(const char *from, const char *to) {
  DS_FS_SEAM(DS_FS_LINK);
  return link(from, to);
}

int ds_fs_unlink(const char *path) {
  DS_FS_SEAM(DS_FS_UNLINK);
  return unlink(path);
}

int ds_fs_create(const char *path, int flags) {
  DS_FS_SEAM(DS_FS_CREATE);
  return open(path, flags | O_CREAT | O_CLOEXEC, 0644);
}

int ds_fs_mkdir(const char *path) {
  DS_FS_SEAM(DS_FS_MKDIR);
  return mkdir(path, 0755);
}

int ds_fs_rmdir(const char *path) {
  DS_FS_SEAM(DS_FS_RMDIR);
  return rmdir(path);
}

/* ---- the journal's writes --------------------------------------------------------- */

ssize_t ds_fs_pwritev(int fd, const struct iovec *v, int n, off_t off) {
  DS_FS_SEAM(DS_FS_WRITE);
  return pwritev(fd, v, n, off);
}

ssize_t ds_fs_pwrite(int fd, const void *buf, size_t n, off_t off) {
  DS_FS_SEAM(DS_FS_WRITE);
  return pwrite(fd, buf, n, off);
}

int ds_fs_ftruncate(int fd, off_t len) {
  DS_FS_SEAM(DS_FS_TRUNCATE);
  return ftruncate(fd, len);
}
