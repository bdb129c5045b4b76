/* console.c -- where rank 0's progress bar goes, and log lines around it.
 *
 * A bar needs a terminal. Run directly, stderr is one. Under mpirun, rank 0's
 * stderr is a pipe that mpirun copies to its own stderr, and the ranks have
 * no controlling terminal (mpirun gives them sessions of their own): then the
 * bar is drawn on the terminal mpirun's own stderr is (/proc/PPID/fd/2: our
 * parent is mpirun on the launching node), and only then, so a job
 * whose output goes to a file or a Slurm log gets the plain periodic lines.
 * DYNSWEEP_PROGRESS=log forces those. While a bar is drawn, log lines go
 * to the same terminal after clearing the bar's line (a line that went the
 * long way through mpirun would land in the middle of the bar); the next
 * redraw puts the bar back. */
#include <fcntl.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"

static FILE *g_tty;   /* where the bar goes, or NULL: plain lines on stderr */
static int g_shown;   /* a bar is on the screen (no newline after it yet) */

/* The terminal pid's stderr is, opened for writing, or -1. */
static int terminal_of(pid_t pid) {
  char p[64], t[256];
  snprintf(p, sizeof p, "/proc/%ld/fd/2", (long)pid);
  ssize_t n = readlink(p, t, sizeof t - 1);
  if (n <= 0) return -1;
  t[n] = 0;
  if (strncmp(t, "/dev/pts/", 9) != 0 && strncmp(t, "/dev/tty", 8) != 0) return -1;
  int fd = open(t, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd >= 0 && !isatty(fd)) {
    close(fd);
    fd = -1;
  }
  return fd;
}

int ds_console_open_bar(void) {
  if (ds_knob_is(DS_KNOB_PROGRESS, "log")) return 0;
  if (isatty(2)) {
    g_tty = stderr;
    return 1;
  }
  /* mpirun starts the ranks in a session of their own, without a controlling
   * terminal: open the terminal our parent (mpirun, for the ranks on the
   * launching node) writes its stderr to; nothing if that is a file or pipe */
  int fd = terminal_of(getppid());
  if (fd < 0) return 0;
  g_tty = fdopen(fd, "w");
  if (!g_tty) close(fd);
  return g_tty != NULL;
}

int ds_console_width(void) {
  struct winsize w;
  if (g_tty && ioctl(fileno(g_tty), TIOCGWINSZ, &w) == 0 && w.ws_col >= 20) return w.ws_col;
  const char *c = getenv("COLUMNS");
  int n = c ? atoi(c) : 0;
  return n >= 20 && n <= 1000 ? n : 80;
}

void ds_console_bar(const char *line) {
  if (!g_tty) return;
  int w = ds_console_width() - 1; /* never the last column: no wrap, no stale line */
  fprintf(g_tty, "\r%.*s\033[K", w, line);
  fflush(g_tty);
  g_shown = 1;
}

void ds_console_bar_end(void) {
  if (g_tty && g_shown) {
    fputc('\n', g_tty);
    fflush(g_tty);
  }
  g_shown = 0;
}

void ds_console_vline(const char *prefix, const char *fmt, va_list ap) {
  FILE *f = g_tty ? g_tty : stderr;
  if (g_tty && g_shown) fputs("\r\033[K", g_tty);
  g_shown = 0;
  fputs(prefix, f);
  vfprintf(f, fmt, ap);
  fputc('\n', f);
  fflush(f);
}

void ds_fmt_bytes(char *buf, size_t n, double b) {
  const double MiB = 1048576.0;
  if (!isfinite(b)) snprintf(buf, n, "unlimited");
  else if (b >= 1024 * MiB) snprintf(buf, n, "%.1f GB", b / (1024 * MiB));
  else snprintf(buf, n, b >= 10 * MiB ? "%.0f MB" : "%.2f MB", b / MiB);
}
