/* isolate.c -- a piece of work in a child process whose death the parent
 * observes (include/dynsweep/isolate.h; issue 23).
 *
 * Pipe format, child -> parent: u32 type, u32 0, u64 length, then the bytes.
 * The parent polls the pipe (0.1 s) so that a drain request that arrives
 * while the child runs is forwarded at once. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dynsweep/knobs.h"
#include "dynsweep/isolate.h"
#include "dynsweep/util.h"

struct ds_iso_chan {
  int fd;
};

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, len -= (size_t)w;
  }
  return 0;
}

int ds_iso_send(ds_iso_chan *ch, uint32_t type, const void *buf, size_t len) {
  uint32_t h[2] = {type, 0};
  uint64_t l = len;
  if (write_all(ch->fd, h, sizeof h) || write_all(ch->fd, &l, sizeof l)) return 1;
  return len ? write_all(ch->fd, buf, len) != 0 : 0;
}

/* Reads exactly len bytes, forwarding a drain request while it waits.
 * 1 = got them, 0 = end of file, -1 = error. */
static int read_all(int fd, void *buf, size_t len, pid_t child, ds_iso_fate *f) {
  char *p = buf;
  size_t got = 0;
  while (got < len) {
    if (*ds_drain_flag() && !f->drained) {
      f->drained = 1;
      kill(child, SIGUSR1); /* the child's own drain handler: checkpoint, hand back */
    }
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, 100);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) continue;
    ssize_t n = read(fd, p + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) return got ? -1 : 0;
    got += (size_t)n;
  }
  return 1;
}

static void run_child(int fd, int rfd, pid_t parent, ds_iso_body body, void *arg) {
  close(rfd);
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* the whole job's death takes the child along */
  if (getppid() != parent) _exit(111); /* the parent died before the line above */
  /* the kernel's own death for a crash: no handler of the MPI library
   * (Open MPI prints a backtrace and may try to abort the job) */
  static const int crash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof crash / sizeof *crash; i++) signal(crash[i], SIG_DFL);
  ds_iso_chan ch = {fd};
  int rc = body(arg, &ch);
  close(fd);
  _exit(rc & 0xff);
}

int ds_isolate_run(ds_iso_body body, void *body_arg, ds_iso_recv recv, void *recv_arg,
                   ds_iso_fate *fate) {
  memset(fate, 0, sizeof *fate);
  int p[2];
  if (pipe(p) != 0) return ds_fail(DS_EIO, "isolated run: pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t parent = getpid();
  double t0 = ds_now();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(p[0]), close(p[1]);
    return ds_fail(e == ENOMEM || e == EAGAIN ? DS_ENOMEM : DS_EIO, "isolated run: fork: %s",
                   strerror(e));
  }
  if (pid == 0) run_child(p[1], p[0], parent, body, body_arg);
  close(p[1]);
  fate->started = 1;
  char *buf = NULL;
  size_t cap = 0;
  for (;;) {
    uint32_t h[2];
    uint64_t len;
    if (read_all(p[0], h, sizeof h, pid, fate) != 1 || read_all(p[0], &len, sizeof len, pid, fate) != 1)
      break;
    if (len > cap) {
      char *nb = realloc(buf, len);
      if (!nb) {
        kill(pid, SIGKILL); /* cannot take its result: it is lost, not the child's fault */
        break;
      }
      buf = nb, cap = len;
    }
    if (len && read_all(p[0], buf, len, pid, fate) != 1) break;
    if (recv && recv(recv_arg, h[0], buf, len)) {
      kill(pid, SIGKILL);
      break;
    }
  }
  free(buf);
  close(p[0]);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  fate->wall_s = ds_now() - t0;
  fate->maxrss_kb = ru.ru_maxrss;
  if (WIFSIGNALED(status)) {
    fate->signo = WTERMSIG(status);
    /* a kill of the whole job reaches this process too, within the grace */
    if (fate->signo == SIGKILL) ds_sleep(DS_ISO_KILL_GRACE_S);
  } else {
    fate->exited = 1;
    fate->code = WEXITSTATUS(status);
  }
  return DS_OK;
}

void ds_iso_fate_text(const ds_iso_fate *f, char *buf, size_t n) {
  if (f->signo) {
    const char *name = sigabbrev_np(f->signo);
    snprintf(buf, n, "SIG%s (signal %d)", name ? name : "?", f->signo);
  } else {
    snprintf(buf, n, "exit code %d", f->code);
  }
}

/* ---- the test-only fault switch -------------------------------------------- */

static void crash_now(const char *how) {
  if (how && !strcmp(how, "oom")) {
    /* touch memory until the kernel (a cgroup limit, the OOM killer) ends us */
    for (;;) {
      size_t sz = (size_t)64 << 20;
      char *b = malloc(sz);
      if (!b) abort();
      memset(b, 1, sz);
    }
  }
  raise(SIGSEGV);
  abort();
}

void ds_test_crash(const char *kind, int64_t n) {
  const char *v = ds_knob_str(DS_KNOB_TEST_CRASH);
  if (!v || !*v) return;
  size_t kl = strlen(kind);
  for (const char *p = v; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > kl && !strncmp(p, kind, kl) && p[kl] == ':') {
      char item[64];
      snprintf(item, sizeof item, "%.*s", (int)(len < 63 ? len : 63), p);
      char *num = item + kl + 1, *rest = NULL;
      long long k = strtoll(num, &rest, 10);
      if (rest != num && k == n) crash_now(*rest == ':' ? rest + 1 : NULL);
    }
    p = end ? end + 1 : NULL;
  }
}
