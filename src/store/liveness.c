/* liveness.c -- is a writer running on a store? For `dynsweep status`,
 * without taking or disturbing any lock.
 *
 * A writer holds flock(LOCK_EX) on STORE.journal for as long as it runs
 * (journal.c). Trying to take that lock here, even shared and for a moment,
 * could make a writer that starts at that instant fail, so we only look:
 *   1. /proc/locks lists every flock on this node with the holder's pid and
 *      the file's device and inode;
 *   2. on NFS, Linux emulates flock with a whole-file POSIX lock, which
 *      fcntl(F_GETLK) reports without taking it (also from other nodes).
 * A writer on another node of a file system whose flock is node-local
 * (Lustre's localflock) is invisible to both: the caller then judges by the
 * age of the last update. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dynsweep/store.h"

int ds_store_live_writer(const char *path, long *pid) {
  char jpath[4200];
  snprintf(jpath, sizeof jpath, "%s.journal", path);
  *pid = 0;
  struct stat st;
  if (stat(jpath, &st) != 0) return 0; /* no journal: no writer */
  FILE *f = fopen("/proc/locks", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    /* "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (maj:min in hex) */
    char kind[16], mode[16], rw[16];
    long p;
    unsigned maj, min;
    unsigned long long ino;
    char *c = strchr(line, ':');
    if (!c || sscanf(c + 1, "%15s %15s %15s %ld %x:%x:%llu", kind, mode, rw, &p, &maj, &min,
                     &ino) != 7)
      continue;
    if (!strcmp(kind, "FLOCK") && !strcmp(rw, "WRITE") && ino == (unsigned long long)st.st_ino &&
        maj == major(st.st_dev) && min == minor(st.st_dev)) {
      *pid = p;
      fclose(f);
      return 1;
    }
  }
  if (f) fclose(f);
  int fd = open(jpath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  int held = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  close(fd);
  if (held) *pid = -1; /* a holder we cannot name (another node) */
  return held;
}
