/* signals.c -- the drain signals of `dynsweep run`, from the first moment.
 *
 * SIGUSR1 and SIGTERM ask a run to drain: no new points, running points
 * checkpoint, the store is published, exit 3. The handlers are installed
 * before anything else (main.c: an ELF constructor, which runs before main()
 * and before the OpenBLAS re-exec; the re-exec blocks both signals so one
 * that arrives meanwhile stays pending for the new image), so a signal at any
 * moment drains, or, with nothing started yet, ends the run with exit 3.
 *
 * Every wait after a drain signal is bounded: the handler arms a watchdog
 * (alarm(2)); if the process is still alive when it fires (a peer stopped
 * with SIGSTOP, a collective that never completes, MPI_Init waiting for a
 * rank that never comes), it writes one line to stderr and leaves with
 * _exit(3). Rank 0 (the store's writer) fires DS_DRAIN_GRACE_S seconds after
 * the drain timeout, and its exit makes mpirun/srun end the job; the other
 * ranks fire DS_DRAIN_GRACE_WORKER_S after it, a bound for when rank 0
 * itself is frozen. Exiting is safe for the store at any moment: it survives
 * kill -9 (journal + atomic publish), and the next run resumes. Rank 0
 * stretches its watchdog while it publishes (ds_drain_watchdog_extend), so a
 * slow final publish is not cut short. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "dynsweep/util.h"

static volatile sig_atomic_t g_drain;
static volatile sig_atomic_t g_watchdog_s = 25 + DS_DRAIN_GRACE_WORKER_S;
static volatile sig_atomic_t g_exit_code = DS_EXIT_DRAINED;

static void on_drain(int sig) {
  (void)sig;
  if (!g_drain) alarm((unsigned)g_watchdog_s);
  g_drain = 1;
}

static void on_watchdog(int sig) {
  (void)sig;
  static const char msg[] = "dynsweep: drain watchdog: still alive after the drain timeout; "
                            "exiting as drained (the store is intact; run again to resume)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(g_exit_code);
}

void ds_signals_install_drain(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_drain;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = on_watchdog;
  sigaction(SIGALRM, &sa, NULL);
  sa.sa_handler = SIG_IGN; /* a file size limit: the write fails with EFBIG and is reported */
  sigaction(SIGXFSZ, &sa, NULL);
  sigset_t drain;
  sigemptyset(&drain);
  sigaddset(&drain, SIGTERM);
  sigaddset(&drain, SIGUSR1);
  sigaddset(&drain, SIGALRM);
  sigprocmask(SIG_UNBLOCK, &drain, NULL); /* blocked across the re-exec: deliver now */
}

void ds_signals_unblock(void) {
  sigset_t drain;
  sigemptyset(&drain);
  sigaddset(&drain, SIGTERM);
  sigaddset(&drain, SIGUSR1);
  sigprocmask(SIG_UNBLOCK, &drain, NULL);
}

void ds_drain_exit_code_set(int code) { g_exit_code = code; }

int ds_signal_drain_requested(void) { return g_drain != 0; }
volatile sig_atomic_t *ds_drain_flag(void) { return &g_drain; }

void ds_drain_watchdog_set(double drain_timeout_s, int rank0) {
  double s = drain_timeout_s + (rank0 ? DS_DRAIN_GRACE_S : DS_DRAIN_GRACE_WORKER_S);
  g_watchdog_s = s < 1 ? 1 : s > 1e6 ? 1000000 : (sig_atomic_t)s;
  if (g_drain) alarm((unsigned)g_watchdog_s); /* signalled before we knew our rank */
}

void ds_drain_watchdog_extend(double seconds) {
  if (!g_drain) return;
  unsigned left = alarm(0), want = seconds < 1 ? 1 : seconds > 1e6 ? 1000000 : (unsigned)seconds;
  alarm(left > want ? left : want);
}
