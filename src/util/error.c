/* error.c -- errors as values: one message buffer, context prepended on the
 * way up, printed once by main(). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/util.h"

static _Thread_local char errbuf[4096];

/* DS_TRY's locations of the current error (the first DS_TRYS_MAX, and how many) */
enum { DS_TRYS_MAX = 32 };
static _Thread_local struct {
  const char *file, *func;
  int line;
} trys[DS_TRYS_MAX];
static _Thread_local int ntrys;

int ds_trace(int code, const char *file, int line, const char *func) {
  if (ntrys < DS_TRYS_MAX) {
    trys[ntrys].file = file;
    trys[ntrys].func = func;
    trys[ntrys].line = line;
  }
  ntrys++;
  return code;
}

/* __FILE__ as the compiler saw it, less the source tree's path */
static const char *src_relative(const char *file) {
#ifdef DS_SOURCE_DIR
  size_t n = strlen(DS_SOURCE_DIR);
  if (!strncmp(file, DS_SOURCE_DIR, n) && file[n] == '/') return file + n + 1;
#endif
  return file;
}

void ds_errtrace_print(FILE *f) {
  for (int i = 0; i < ntrys && i < DS_TRYS_MAX; i++)
    fprintf(f, "dynsweep:   at %s:%d (%s)\n", src_relative(trys[i].file), trys[i].line, trys[i].func);
  if (ntrys > DS_TRYS_MAX) fprintf(f, "dynsweep:   ... and %d more\n", ntrys - DS_TRYS_MAX);
}

int ds_fail_at(const char *file, int line, const char *func, int code, const char *fmt, ...) {
  ntrys = 0;
  ds_trace(code, file, line, func);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errbuf, sizeof errbuf, fmt, ap);
  va_end(ap);
  return code;
}

int ds_context(int code, const char *fmt, ...) {
  char ctx[1024], old[sizeof errbuf];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx, sizeof ctx, fmt, ap);
  va_end(ap);
  memcpy(old, errbuf, sizeof old);
  snprintf(errbuf, sizeof errbuf, "%s: %s", ctx, old);
  return code;
}

const char *ds_errmsg(void) { return errbuf[0] ? errbuf : "unknown error"; }
void ds_clear_error(void) {
  errbuf[0] = 0;
  ntrys = 0;
}
int ds_exit_code(int code) { return code == DS_OK ? 0 : code == DS_EINPUT ? 2 : 1; }

void *ds_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) ds_fail(DS_ENOMEM, "out of memory allocating %zu x %zu bytes", n, size);
  return p;
}

char *ds_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = ds_calloc(n, 1);
  if (p) memcpy(p, s, n);
  return p;
}

/* Files read whole are small (sweep files): a FIFO, a directory or a device is refused
 * before it is opened (a FIFO would block, /dev/zero would never end), and so
 * is a file over DS_READ_FILE_MAX bytes. */
static const char *file_kind(mode_t m) {
  return S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int ds_read_file(const char *path, char **text, size_t *len) {
  struct stat st;
  if (stat(path, &st) != 0)
    return ds_fail(errno == ENOENT ? DS_EINPUT : DS_EIO, "%s: cannot open: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return ds_fail(DS_EINPUT, "%s: is %s, not a regular file", path,
                   file_kind(st.st_mode));
  if (st.st_size > DS_READ_FILE_MAX)
    return ds_fail(DS_EINPUT, "%s: too large (%lld bytes, limit %d = 16 MiB)",
                   path, (long long)st.st_size, DS_READ_FILE_MAX);
  /* O_NONBLOCK: if the name was replaced by a FIFO since the stat, open does not block */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return ds_fail(errno == ENOENT ? DS_EINPUT : DS_EIO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return ds_fail(DS_EINPUT, "%s: is %s, not a regular file", path,
                   file_kind(st.st_mode));
  }
  char *buf = malloc((size_t)DS_READ_FILE_MAX + 2);
  if (!buf) {
    close(fd);
    return ds_fail(DS_ENOMEM, "%s: out of memory reading file", path);
  }
  size_t n = 0;
  int err = 0;
  while (n <= (size_t)DS_READ_FILE_MAX) { /* one byte past the limit: a file that grew */
    ssize_t got = read(fd, buf + n, (size_t)DS_READ_FILE_MAX + 1 - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) err = errno;
    if (got <= 0) break;
    n += (size_t)got;
  }
  close(fd);
  if (err) {
    free(buf);
    return ds_fail(DS_EIO, "%s: read error: %s", path, strerror(err));
  }
  if (n > (size_t)DS_READ_FILE_MAX) {
    free(buf);
    return ds_fail(DS_EINPUT, "%s: too large (more than %d bytes = 16 MiB)", path,
                   DS_READ_FILE_MAX);
  }
  char *shrunk = realloc(buf, n + 1);
  if (shrunk) buf = shrunk;
  buf[n] = 0;
  *text = buf;
  if (len) *len = n;
  return DS_OK;
}
