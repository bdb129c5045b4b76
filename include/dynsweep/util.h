/* util.h -- errors as values, counter-based RNG, timers, logging, BLAS kernel.
 *
 * Errors: every fallible function returns int (DS_OK == 0 or a DS_E* code).
 * The first failure records a message with ds_fail(); callers going up may
 * add context with ds_context(); main() prints ds_errmsg() once and exits with
 * ds_exit_code(code). Nothing below main() calls exit() or abort().
 */
#ifndef DYNSWEEP_UTIL_H
#define DYNSWEEP_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
  DS_OK = 0,
  DS_EINPUT = 2, /* bad user input (sweep file, CLI, data file): exit code 2 */
  DS_EIO = 3,    /* file system / HDF5 error */
  DS_ENOMEM = 4, /* allocation failed */
  DS_EMPI = 5,   /* MPI / BLACS / ScaLAPACK error */
  DS_ENUM = 6,   /* numerical failure (LAPACK info != 0, ...) */
  DS_EINTERNAL = 7
};

/* Record an error message (printf-style) and return code. A macro: the
 * trace (below) starts at the place of the failure. */
int ds_fail_at(const char *file, int line, const char *func, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define ds_fail(code, ...) ds_fail_at(__FILE__, __LINE__, __func__, code, __VA_ARGS__)
/* Prepend context "ctx: " to the current message; returns code unchanged. */
int ds_context(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ds_errmsg(void);
void ds_clear_error(void);
/* Process exit code for an error code: DS_EINPUT -> 2, others -> 1.. */
int ds_exit_code(int code);

/* DS_TRY(call): return the call's error code, recording where (file, line,
 * function: PETSc's PetscCall traceback) in the current error's trace, which
 * ds_fail starts (at its own place) and ds_clear_error empties. The message itself is unchanged; `run -v`
 * prints the trace after it (ds_errtrace_print). */
#define DS_TRY(expr)                                                           \
  do {                                                                         \
    int ds_try_rc_ = (expr);                                                   \
    if (ds_try_rc_ != DS_OK) return ds_trace(ds_try_rc_, __FILE__, __LINE__, __func__); \
  } while (0)
/* Record a location in the trace (DS_TRY's); returns code unchanged. */
int ds_trace(int code, const char *file, int line, const char *func);
/* The trace of the current error, innermost first, one line a location:
 * "dynsweep:   at src/store/publish.c:321 (ds_store_publish)" (the first is
 * the ds_fail, when a ds_fail started it); nothing when empty. File names
 * relative to the source tree. */
void ds_errtrace_print(FILE *f);

/* calloc that records DS_ENOMEM on failure (returns NULL). */
void *ds_calloc(size_t n, size_t size);
char *ds_strdup(const char *s);
/* Read a whole file (NUL-terminated); DS_EIO / DS_EINPUT on failure. Only a
 * regular file of at most DS_READ_FILE_MAX bytes: a FIFO, directory or
 * device is refused without being read (DS_EINPUT). */
#define DS_READ_FILE_MAX (16 * 1024 * 1024)
int ds_read_file(const char *path, char **text, size_t *len);

/* ---- counter-based RNG: Philox4x32-10 ------------------------------------
 * A stream is keyed by (sweep seed, combo, replica, stream id); its values
 * depend on nothing else, so a point's trajectory is the same whichever rank
 * runs it. */
enum { DS_STREAM_INIT = 1, DS_STREAM_DATA = 2, DS_STREAM_BATCH = 3, DS_STREAM_TEST = 4, DS_STREAM_DIAG = 5,
       DS_STREAM_DROPOUT = 6 /* cnn.h's dropout masks */ };
typedef struct {
  uint32_t key[2];
  uint32_t ctr[4];
  uint32_t buf[4];
  int idx; /* next unused word in buf, 4 = empty */
  int have_spare;
  double spare;
} ds_rng;
void ds_rng_init(ds_rng *r, uint64_t seed, uint64_t combo, uint32_t replica, uint32_t stream);
uint32_t ds_rng_u32(ds_rng *r);
uint64_t ds_rng_u64(ds_rng *r);
double ds_rng_uniform(ds_rng *r); /* in (0, 1), 53 random bits */
double ds_rng_normal(ds_rng *r);  /* N(0,1), Box-Muller */
/* Philox4x32-10 block function (exposed for the known-answer test). */
void ds_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]);

/* ---- hashing ---- */
uint64_t ds_fnv1a(const void *data, size_t len, uint64_t h); /* h = 0 starts */

/* ---- time ---- */
double ds_now(void);        /* monotonic seconds */
double ds_cpu_time(void);   /* this process's user+system CPU seconds */
void ds_iso_time(char *buf, size_t n); /* current UTC time, ISO 8601 */
void ds_sleep(double seconds);

/* ---- reference listings (dynsweep keys, dynsweep version --knobs) ---- */
void ds_print_wrapped(FILE *f, const char *s); /* indented by 4, wrapped at 78 columns */
void ds_print_md_cell(FILE *f, const char *s); /* a markdown table cell: | escaped */

/* ---- logging (stderr, prefixed "dynsweep: ") ---- */
void ds_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ds_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Rank 0's console (console.c): a progress bar on a terminal (stderr, or
 * the terminal mpirun writes its stderr to;
 * DYNSWEEP_PROGRESS=log: never), else plain lines. ds_log and
 * ds_warn clear a bar before they print. */
#include <stdarg.h>
int ds_console_open_bar(void);          /* 1 if a bar can be drawn */
int ds_console_width(void);             /* columns of that terminal (80 if unknown) */
void ds_console_bar(const char *line);  /* redraw the bar line in place, cut to the width */
void ds_console_bar_end(void);          /* end the bar's line */
/* bytes as "80.1 GB" / "512 MB" (2^30 / 2^20) */
void ds_fmt_bytes(char *buf, size_t n, double bytes);
void ds_console_vline(const char *prefix, const char *fmt, va_list ap);

/* ---- OpenBLAS kernel ----
 * Must be called first thing in main(), before MPI_Init: if OpenBLAS chose a
 * kernel slower than the CPU supports and the user did not set
 * OPENBLAS_CORETYPE, re-execs the program with OPENBLAS_CORETYPE set to the
 * fast kernel (DYNSWEEP_NO_REEXEC=1 turns this into a warning). Also sets
 * BLAS threads to 1 unless OPENBLAS_NUM_THREADS is set. */
void ds_blas_ensure_fast_kernel(char **argv);
/* Why the kernel that runs differs from the best one, in one sentence for
 * `version` ("differs because OPENBLAS_CORETYPE=Haswell is set ..."). */
const char *ds_blas_explain(void);
/* One warning line when a slower kernel than the CPU supports runs (and
 * why); nothing otherwise. Called once per run, by rank 0 only. */
void ds_blas_warn(void);
const char *ds_blas_kernel(void);       /* kernel that is running, e.g. "SkylakeX" */
const char *ds_blas_best_kernel(void);  /* fastest kernel this CPU supports */
const char *ds_blas_config(void);       /* openblas_get_config() */


/* ---- drain signals (signals.c) ----
 * SIGUSR1/SIGTERM set a flag (drain); SIGXFSZ is ignored. Installed first
 * thing by `dynsweep run`. After a drain signal every wait is bounded: a
 * watchdog ends the process with exit 3 after the drain timeout plus
 * DS_DRAIN_GRACE_S seconds on rank 0 (plus DS_DRAIN_GRACE_WORKER_S on the
 * others); the store survives that like a kill -9. */
#include <signal.h>
/* Exit code of a run that stopped on a drain signal (SIGTERM/SIGUSR1) with
 * points left: nothing is lost, `dynsweep run` again resumes. */
#define DS_EXIT_DRAINED 3
#define DS_DRAIN_GRACE_S 5
#define DS_DRAIN_GRACE_WORKER_S 120
void ds_signals_install_drain(void);
void ds_signals_unblock(void);          /* SIGTERM/SIGUSR1 back to deliverable */
int ds_signal_drain_requested(void);
volatile sig_atomic_t *ds_drain_flag(void);
void ds_drain_watchdog_set(double drain_timeout_s, int rank0); /* the bound a signal arms */
/* The exit code of a drained run, also the watchdog's (`run --drain-exit`;
 * DS_EXIT_DRAINED unless set; the Slurm job scripts set 0). */
void ds_drain_exit_code_set(int code);
void ds_drain_watchdog_extend(double seconds);      /* at least this long from now, if armed */
#endif
