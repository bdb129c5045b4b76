/* isolate.h -- run a piece of work in a child process of this rank, whose
 * death the (live) parent observes (issue 23, docs/design.md "Attempts").
 *
 * ds_isolate_run forks; the child runs body() with MPI untouched (it may use
 * only what is local to the process: BLAS, LAPACK, and collectives on
 * communicators of size one, which Open MPI's coll/self answers in place),
 * sends its results to the parent over a pipe (ds_iso_send) and leaves with
 * _exit, so nothing the parent holds (the MPI library, an open HDF5 store) is
 * finalised or flushed twice. The child dies with its parent
 * (PR_SET_PDEATHSIG): a whole-job kill never leaves it behind.
 *
 * The parent passes each message to recv() as it arrives, forwards a drain
 * request (the drain flag of util/signals.c set while the child runs) to the
 * child as SIGUSR1, and reports how the child ended in *fate: its exit code
 * or the signal that killed it, its peak RSS (wait4), and whether the parent
 * itself had been asked to drain meanwhile. A child killed by SIGKILL is
 * reported only after a grace period (DS_ISO_KILL_GRACE_S) the parent
 * survives: a kill of the whole job reaches the parent within it (Slurm's
 * step kill and a node-wide kill signal each process in turn), so such a
 * kill never reads as the child's own death. */
#ifndef DYNSWEEP_ISOLATE_H
#define DYNSWEEP_ISOLATE_H
#include <stddef.h>
#include <stdint.h>

#define DS_ISO_KILL_GRACE_S 1.0

typedef struct ds_iso_chan ds_iso_chan;

typedef struct {
  int started;       /* the child ran (fork succeeded) */
  int exited, code;  /* exit(code) */
  int signo;         /* killed by this signal (0: exited) */
  int drained;       /* a drain request was forwarded to the child */
  int64_t maxrss_kb; /* the child's peak resident set, kB (wait4's ru_maxrss) */
  double wall_s;
} ds_iso_fate;

/* Runs in the child; its return value becomes the exit code (0..255). */
typedef int (*ds_iso_body)(void *arg, ds_iso_chan *ch);
/* Runs in the parent for each message; non-zero: stop reading (the child is
 * killed). */
typedef int (*ds_iso_recv)(void *arg, uint32_t type, const char *buf, size_t len);

/* DS_OK when the child ran and ended (however: see *fate); an error when it
 * could not be started (fork, pipe), with the message set. */
int ds_isolate_run(ds_iso_body body, void *body_arg, ds_iso_recv recv, void *recv_arg,
                   ds_iso_fate *fate);

/* Child side: one message to the parent. Non-zero when the parent is gone. */
int ds_iso_send(ds_iso_chan *ch, uint32_t type, const void *buf, size_t len);

/* "SIGKILL (signal 9)" / "exit code 3": how the child ended, for a reason. */
void ds_iso_fate_text(const ds_iso_fate *f, char *buf, size_t n);

/* The test-only fault switch DYNSWEEP_TEST_CRASH="KIND:N[,KIND:N...]" with
 * KIND point (a store row id) or pixel (a map grid index) and an optional
 * ":segv" (default) or ":oom" (touch memory until the kernel kills the
 * process): crashes the calling process for real when (kind, n) is listed.
 * Unset: nothing (the knob is read once: util/knobs.c). */
void ds_test_crash(const char *kind, int64_t n);
#endif
