/* submit.c -- `dynsweep submit`: validate a sweep file, write a Slurm batch
 * script next to the store and submit it with sbatch.
 *
 * Keeping a sweep going across time limits: each job, first thing, submits
 * its own follow-on job (`sbatch --dependency=afterany:<this job>`, same
 * script) and, when `dynsweep run` reports the sweep complete (exit 0) or a
 * real error, cancels it again. A job that drained at the time limit (or was
 * killed outright) leaves its follow-on in the queue, which starts as soon as
 * this job ends and resumes the store. See docs/slurm.md for why this and not
 * `scontrol requeue` (in short: Slurm holds a requeued job for 121 s, and a
 * job killed hard at its limit cannot requeue itself; a follow-on submitted
 * up front survives both). The script body is kept identical to
 * slurm/dynsweep-srun.sbatch and slurm/dynsweep-mpirun.sbatch
 * (tests/slurm_submit.sh checks that). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dynsweep/config.h"
#include "dynsweep/sched.h"
#include "dynsweep/submit.h"
#include "dynsweep/tile.h"
#include "dynsweep/util.h"

/* The job script compares `dynsweep run`'s exit code with DS_EXIT_DRAINED
 * (sched.h): stopped on a drain signal with points left, resumable. */
const char *ds_usage_submit =
    "usage: dynsweep submit SWEEP.yaml -o STORE.h5 [options]\n"
    "\n"
    "Validates the sweep file, writes the Slurm batch script STORE.h5.sbatch and\n"
    "submits it with sbatch. The job runs 'dynsweep run SWEEP -o STORE' (one MPI rank\n"
    "per core), which resumes STORE if it exists. Shortly before its time limit (the\n"
    "drain margin, from the drain costs measured by the jobs before it) the job\n"
    "drains, and a follow-on job, submitted by each job when it starts\n"
    "(--dependency=afterany), resumes the sweep, until it is complete. A job that\n"
    "drained and handed over ends COMPLETED in sacct. Job output goes to\n"
    "STORE.h5.slurm-JOBID.out; the chain: 'dynsweep status STORE'. Cancel the whole\n"
    "chain with 'scancel --name=JOBNAME'.\n"
    "  -o, --output STORE        the store to write or resume (required)\n"
    "  -N, --nodes N             nodes (default 1)\n"
    "      --min-nodes M         a job may start on M..N nodes (--nodes=M-N): after a\n"
    "                            node is lost the follow-on runs on those left\n"
    "  -n, --ntasks N            MPI ranks in all (default: one per core of the nodes,\n"
    "                            which are then allocated whole, --exclusive)\n"
    "      --ntasks-per-node N   MPI ranks per node (instead of --ntasks)\n"
    "  -t, --time T              time limit of each job, Slurm format: MIN, MIN:SEC,\n"
    "                            H:MIN:SEC, D-H, D-H:MIN, D-H:MIN:SEC (default 1:00:00)\n"
    "  -p, --partition P         partition\n"
    "  -A, --account A           account to charge\n"
    "      --qos Q               quality of service\n"
    "  -J, --job-name NAME       job name (default ds-<sweep name>)\n"
    "      --launcher L          srun (default; 'srun --mpi=TYPE') or mpirun\n"
    "      --mpi TYPE            srun's --mpi plugin (default pmix)\n"
    "      --signal-time S       seconds before the time limit at which the first job\n"
    "                            drains (default: 90, or a third of a limit under 10\n"
    "                            minutes); later jobs drain max(10, 2 x the measured\n"
    "                            drain cost + 5) s before it (dynsweep status --chain)\n"
    "      --max-jobs N          stop the chain after N jobs (default 100)\n"
    "      --sbatch-option OPT   add the line '#SBATCH OPT' (repeatable), e.g. --mem=8G\n"
    "      --run-option OPT      pass OPT on to 'dynsweep run' (repeatable), e.g. --verbose\n"
    "      --set KEY=VALUE       override an option of the sweep (repeatable; checked now,\n"
    "                            passed on to 'dynsweep run', see 'dynsweep plan --help')\n"
    "      --max-attempts N      'dynsweep run --max-attempts N': a point killed while\n"
    "                            running this often ends failed, so the chain ends (2)\n"
    "      --dynsweep PATH       the dynsweep executable the job runs (default: this one)\n"
    "      --dry-run             write the script and print the sbatch command; submit nothing;\n"
    "                            estimate the time as 'dynsweep plan' does, suggest a --time\n"
    "                            and say how many jobs the given --time needs\n"
    "  -q, --quiet               no per-point progress lines in the job output\n"
    "Exit codes: 0 submitted (or written, --dry-run), 2 bad input, 1 sbatch failed.\n";

#define SUB_MAX_EXTRA 32
/* The drain margin after the first job: max(floor, factor x measured drain
 * cost + slack) seconds (src/submit/chain.c, docs/slurm.md). */
#define SUB_MARGIN_FLOOR 10
#define SUB_MARGIN_FACTOR 2
#define SUB_MARGIN_SLACK 5

typedef struct {
  const char *sweep, *store;
  long nodes, ntasks, ntasks_per_node, min_nodes;
  const char *time;
  long time_s;
  const char *partition, *account, *qos, *job_name;
  const char *launcher, *mpi, *bin;
  long signal_s, max_jobs;
  const char *extra[SUB_MAX_EXTRA];
  int nextra;
  const char *runopt[SUB_MAX_EXTRA];
  int nrunopt;
  char *sets[SUB_MAX_EXTRA]; /* --set KEY=VALUE, also in runopt */
  int nset;
  int dry_run, quiet;
} sub_opts;

static int sub_bad(const char *fmt, const char *arg) {
  fprintf(stderr, "dynsweep: submit: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n%s", ds_usage_submit);
  return 2;
}

/* A whole number in lo..hi, else -1. */
static long sub_num(const char *s, long lo, long hi) {
  if (!s || !*s) return -1;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9') return -1;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  return v;
}

/* Slurm's time formats -> seconds (-1 if malformed): "M", "M:S", "H:M:S",
 * "D-H", "D-H:M", "D-H:M:S". Every field is a whole number. */
static long ds_submit_parse_time(const char *t) {
  if (!t || !*t || strlen(t) > 32) return -1;
  long f[4] = {0, 0, 0, 0};
  int nf = 0;
  long days = -1;
  const char *p = t;
  const char *dash = strchr(t, '-');
  if (dash) {
    char d[16];
    size_t n = (size_t)(dash - t);
    if (n == 0 || n >= sizeof d) return -1;
    memcpy(d, t, n);
    d[n] = 0;
    if ((days = sub_num(d, 0, 365)) < 0) return -1;
    p = dash + 1;
  }
  char buf[40];
  snprintf(buf, sizeof buf, "%s", p);
  char *save = NULL;
  size_t len = strlen(buf);
  if (!len || buf[0] == ':' || buf[len - 1] == ':' || strstr(buf, "::")) return -1;
  for (char *tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
    if (nf == 3) return -1;
    if ((f[nf++] = sub_num(tok, 0, 1000000)) < 0) return -1;
  }
  if (nf == 0) return -1;
  long s;
  if (days >= 0) { /* D-H, D-H:M, D-H:M:S */
    long h = f[0], m = nf > 1 ? f[1] : 0, sec = nf > 2 ? f[2] : 0;
    s = days * 86400 + h * 3600 + m * 60 + sec;
  } else if (nf == 1) {
    s = f[0] * 60;
  } else if (nf == 2) {
    s = f[0] * 60 + f[1];
  } else {
    s = f[0] * 3600 + f[1] * 60 + f[2];
  }
  return s;
}

/* Names that go into #SBATCH lines and shell words unquoted: partition,
 * account, qos, job name, mpi type. */
static int sub_safe_name(const char *s) {
  if (!s || !*s || strlen(s) > 200) return 0;
  for (const char *p = s; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.' || c == ',' || c == '+' || c == ':'))
      return 0;
  }
  return 1;
}

static int sub_printable(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p < 0x20 || *p == 0x7f) return 0;
  return 1;
}

/* Absolute form of a path whose last component may not exist yet. */
static int sub_abspath(const char *in, char *out, size_t n) {
  char dir[PATH_MAX], real[PATH_MAX];
  const char *slash = strrchr(in, '/');
  const char *base = slash ? slash + 1 : in;
  if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
    return ds_fail(DS_EINPUT, "%s: not a file name", in);
  if (slash) {
    size_t dl = (size_t)(slash - in);
    if (dl == 0) dl = 1; /* "/x" */
    if (dl >= sizeof dir) return ds_fail(DS_EINPUT, "%s: path too long", in);
    memcpy(dir, in, dl);
    dir[dl] = 0;
  } else {
    snprintf(dir, sizeof dir, ".");
  }
  if (!realpath(dir, real))
    return ds_fail(DS_EINPUT, "%s: directory %s: %s", in, dir, strerror(errno));
  struct stat st;
  if (stat(real, &st) || !S_ISDIR(st.st_mode)) return ds_fail(DS_EINPUT, "%s: %s is not a directory", in, dir);
  if ((size_t)snprintf(out, n, "%s/%s", strcmp(real, "/") ? real : "", base) >= n)
    return ds_fail(DS_EINPUT, "%s: path too long", in);
  return DS_OK;
}

/* Writes s as one single-quoted shell word. */
static void sub_sq(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputs("'\\''", f);
    else fputc(*s, f);
  }
  fputc('\'', f);
}

/* The part after the settings; identical to the body of the templates in
 * slurm/. Reads DS_SWEEP DS_STORE DS_BIN DS_SCRIPT DS_LAUNCHER DS_MPI
 * DS_MPIRUN_ARGS DS_RUN_ARGS DS_MAX_JOBS DS_DRAIN_EXIT DS_MARGIN_FIRST
 * DS_MARGIN_FLOOR DS_MARGIN_FACTOR DS_MARGIN_SLACK. */
static const char sub_body[] =
    "# ---- body: identical in slurm/dynsweep-srun.sbatch, slurm/dynsweep-mpirun.sbatch\n"
    "# and the scripts 'dynsweep submit' writes; docs/slurm.md explains every line.\n"
    "set -u\n"
    "seg=${DS_SEGMENT:-1}\n"
    "job=${SLURM_JOB_ID:-0}\n"
    "log() { echo \"dynsweep-job: $(date +%Y-%m-%dT%H:%M:%S) job $job segment $seg: $*\"; }\n"
    "\n"
    "# The drain signals, caught from the start. A drain that comes before the\n"
    "# run has started is passed on as soon as it has.\n"
    "#   SIGALRM  this job's drain timer (2.), the drain margin before the limit\n"
    "#   SIGUSR2  Slurm's --signal=B:USR2@S: only a backstop, as Slurm sends it up\n"
    "#            to a minute early; ignored while the drain timer is set to come\n"
    "#            later\n"
    "#   SIGUSR1  a drain by hand (scancel --batch --signal=USR1 JOB)\n"
    "#   SIGTERM  scancel, the time limit (mpirun turns a SIGTERM of its own into\n"
    "#            an abort with exit 1 although every rank drains, so the ranks\n"
    "#            are sent SIGUSR1 instead)\n"
    "# The ranks are sent SIGUSR1 again every 2 s while the run lasts (a launcher\n"
    "# drops a signal that comes before it has started the ranks; a second one is\n"
    "# a no-op).\n"
    "pid= sig=0 t_drain= timer= at=\n"
    "drain() {\n"
    "  sig=1\n"
    "  [ -n \"$t_drain\" ] || { t_drain=${EPOCHREALTIME/,/.}; log \"$1: draining, SIGUSR1 to the ranks\"; }\n"
    "  [ -n \"$pid\" ] || return 0\n"
    "  kill -USR1 \"$pid\" 2>/dev/null\n"
    "  [ -n \"${again:-}\" ] || { ( while sleep 2 && kill -USR1 \"$pid\" 2>/dev/null; do :; done ) & again=$!; }\n"
    "}\n"
    "backstop() {\n"
    "  sig=1\n"
    "  if [ -n \"$timer\" ] && [ \"$(date +%s)\" -lt \"$at\" ]; then\n"
    "    log \"Slurm's drain signal $((at - $(date +%s))) s before the drain timer: ignored\"\n"
    "  else\n"
    "    drain \"Slurm's drain signal\"\n"
    "  fi\n"
    "}\n"
    "trap 'drain \"drain timer\"' ALRM\n"
    "trap backstop USR2\n"
    "trap 'drain SIGUSR1' USR1\n"
    "trap 'drain SIGTERM' TERM\n"
    "\n"
    "# 1. The follow-on job, submitted first so that it exists even if this job\n"
    "#    is killed at its time limit. It starts when this job ends, whatever the\n"
    "#    outcome (afterany), and resumes the store. A requeued run of this job\n"
    "#    (node failure, preemption) keeps the follow-on it already has.\n"
    "next=\n"
    "if [ \"$seg\" -lt \"$DS_MAX_JOBS\" ]; then\n"
    "  next=$(squeue -h -u \"$(id -un)\" -t PENDING -o '%i %E' 2>/dev/null |\n"
    "         awk -v j=\"afterany:${job}(\" 'index($2, j) == 1 { print $1; exit }')\n"
    "  if [ -z \"$next\" ]; then\n"
    "    next=$(sbatch --parsable --dependency=\"afterany:${job}\" \\\n"
    "             --export=\"ALL,DS_SEGMENT=$((seg + 1))\" \"$DS_SCRIPT\") || next=\n"
    "    next=${next%%;*}\n"
    "  fi\n"
    "  log \"follow-on job ${next:-(none: sbatch failed)}\"\n"
    "else\n"
    "  log \"segment $seg of at most $DS_MAX_JOBS: no follow-on job\"\n"
    "fi\n"
    "\n"
    "# 2. The drain margin: how long before the time limit to drain, from the\n"
    "#    drain costs (signal to exit: checkpoint, publish) that the jobs before\n"
    "#    this one measured; 'dynsweep chain' chooses it, says why, and records\n"
    "#    this job in STORE.chain.tsv (dynsweep status STORE --chain).\n"
    "now=$(date +%s)\n"
    "end=$(squeue -h -j \"$job\" -o %e 2>/dev/null) || end=\n"
    "[[ $end =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]] && end=$(date -d \"$end\" +%s 2>/dev/null) || end=\n"
    "m=$(\"$DS_BIN\" chain \"$DS_STORE\" begin --job \"$job\" --segment \"$seg\" --limit $(( ${end:-$now} - now )) \\\n"
    "      --first \"$DS_MARGIN_FIRST\" --floor \"$DS_MARGIN_FLOOR\" --factor \"$DS_MARGIN_FACTOR\" \\\n"
    "      --slack \"$DS_MARGIN_SLACK\" 2>&1) || m=\"$DS_MARGIN_FIRST\"$'\\t'\"${m%%$'\\n'*}\"\n"
    "margin=${m%%$'\\t'*}\n"
    "[[ $margin =~ ^[0-9]+$ ]] || { margin=$DS_MARGIN_FIRST; m=$'x\\tno margin from dynsweep chain'; }\n"
    "log \"drain margin $margin s: ${m#*$'\\t'}\"\n"
    "\n"
    "# 3. Run the sweep (resumes STORE if it exists) in the background, so that\n"
    "#    the drain signals reach this shell's traps at once. A drained run exits\n"
    "#    0 (--drain-exit 0), so Slurm does not count the step as FAILED.\n"
    "#    Ranks: the job's tasks; whole nodes (no --ntasks): one per core.\n"
    "#    --ntasks-per-node: per node of this job (--nodes=M-N: sbatch's\n"
    "#    SLURM_NTASKS counts N nodes even when the job got fewer).\n"
    "ntasks=${SLURM_NTASKS:-}\n"
    "[ -n \"${SLURM_NTASKS_PER_NODE:-}\" ] && [ -n \"${SLURM_JOB_NUM_NODES:-}\" ] &&\n"
    "  ntasks=$((SLURM_NTASKS_PER_NODE * SLURM_JOB_NUM_NODES))\n"
    "if [ -z \"$ntasks\" ]; then  # SLURM_TASKS_PER_NODE looks like \"8(x2),4\"\n"
    "  ntasks=0\n"
    "  tpn=${SLURM_TASKS_PER_NODE:-1}\n"
    "  re='^([0-9]+)[(]x([0-9]+)[)]$'\n"
    "  for p in ${tpn//,/ }; do\n"
    "    if [[ $p =~ $re ]]; then ntasks=$((ntasks + BASH_REMATCH[1] * BASH_REMATCH[2]))\n"
    "    else ntasks=$((ntasks + p)); fi\n"
    "  done\n"
    "fi\n"
    "# A launch that started no rank (srun exits 0 after \"task 0 launch failed\",\n"
    "# e.g. a node's stale PMIx directory) leaves the store as it was: tried\n"
    "# again 10 s later, 3 launches in all, and then the chain stops (a follow-on\n"
    "# would not fare better); a run that started changes the store or journal\n"
    "# (it publishes when it starts), unless the store was complete.\n"
    "launch() {\n"
    "  log \"dynsweep run with $ntasks ranks ($DS_LAUNCHER)${tries:+, launch $((tries + 1)) of 3}\"\n"
    "  case $DS_LAUNCHER in\n"
    "    srun)   srun -n \"$ntasks\" --mpi=\"$DS_MPI\" --kill-on-bad-exit=0 \"$DS_BIN\" run \"$DS_SWEEP\" \\\n"
    "              -o \"$DS_STORE\" --drain-exit 0 ${DS_RUN_ARGS[@]+\"${DS_RUN_ARGS[@]}\"} & ;;\n"
    "    mpirun) mpirun -q -n \"$ntasks\" ${DS_MPIRUN_ARGS[@]+\"${DS_MPIRUN_ARGS[@]}\"} \"$DS_BIN\" run \"$DS_SWEEP\" \\\n"
    "              -o \"$DS_STORE\" --drain-exit 0 ${DS_RUN_ARGS[@]+\"${DS_RUN_ARGS[@]}\"} & ;;\n"
    "    *)      log \"unknown launcher '$DS_LAUNCHER'\"; exit 2 ;;\n"
    "  esac\n"
    "  pid=$!\n"
    "}\n"
    "store_id() { stat -c '%n %i %s %y' \"$DS_STORE\" \"$DS_STORE.journal\" 2>/dev/null; }\n"
    "tries= nolaunch=\n"
    "before=$(store_id)\n"
    "launch\n"
    "[ -n \"$t_drain\" ] && drain \"a drain signal before the start\"\n"
    "# the drain timer: SIGALRM to this shell $margin s before the job's end\n"
    "if [ -n \"$end\" ]; then\n"
    "  at=$((end - margin))\n"
    "  ( d=$((at - $(date +%s))); sleep $((d > 0 ? d : 0)) & s=$!\n"
    "    trap 'kill $s 2>/dev/null; exit 0' TERM; wait $s && kill -ALRM $$ ) &\n"
    "  timer=$!\n"
    "  log \"drain timer set for $(date -d \"@$at\" +%H:%M:%S), $margin s before the time limit\"\n"
    "else\n"
    "  log \"no end time from squeue: Slurm's --signal starts the drain\"\n"
    "fi\n"
    "while :; do\n"
    "  rc=0\n"
    "  while :; do\n"
    "    sig=0; prev=$rc\n"
    "    wait \"$pid\"; rc=$?\n"
    "    [ \"$rc\" -eq 127 ] && { rc=$prev; break; }  # status already collected\n"
    "    [ \"$sig\" -eq 1 ] || break                    # else a trap interrupted wait\n"
    "  done\n"
    "  # dynsweep's own refusal (exit 2), a drain and a run of a complete store\n"
    "  # (\"nothing to do\") leave the store as it was too\n"
    "  [ \"$rc\" -ne 2 ] && [ -z \"$t_drain\" ] && [ \"$(store_id)\" = \"$before\" ] &&\n"
    "    [ \"$(\"$DS_BIN\" status \"$DS_STORE\" --state 2>/dev/null)\" != complete ] || break\n"
    "  tries=$((${tries:-0} + 1))\n"
    "  [ \"$tries\" -lt 3 ] || { nolaunch=1; break; }\n"
    "  log \"the run left $DS_STORE as it was (exit $rc): no rank started? Again in 10 s\"\n"
    "  sleep 10 & wait $!\n"
    "  [ -z \"$t_drain\" ] || break\n"
    "  launch\n"
    "done\n"
    "[ -n \"$timer\" ] && kill \"$timer\" 2>/dev/null\n"
    "[ -n \"${again:-}\" ] && kill \"$again\" 2>/dev/null\n"
    "\n"
    "# 4. The outcome: the store's own state (dynsweep status --state) tells a\n"
    "#    complete run from a drained one (both exit 0), and decides when the\n"
    "#    launcher's exit code hides a drain (mpirun exits 1 when it was sent\n"
    "#    SIGTERM itself). Complete: cancel the follow-on, exit 0. Drained on\n"
    "#    purpose with a follow-on to resume: exit 0 too, a handover is no\n"
    "#    failure. Killed (exit > 128): leave the follow-on to resume. Any other\n"
    "#    failure (bad sweep file, store of another sweep, I/O error, 3 launches\n"
    "#    that left the store as it was): stop the chain, a rerun would fail the\n"
    "#    same way; the job exits with the code (1 for launches that exited 0).\n"
    "state=\n"
    "[ \"$rc\" -ne 2 ] && { state=$(\"$DS_BIN\" status \"$DS_STORE\" --state 2>/dev/null) || state=; }\n"
    "if [ -n \"$nolaunch\" ]; then outcome=failed; [ \"$rc\" -eq 0 ] && rc=1\n"
    "elif [ \"$rc\" -eq 2 ]; then outcome=failed\n"
    "elif [ \"$state\" = complete ]; then outcome=completed\n"
    "elif [ \"$state\" = drained ] || [ \"$rc\" -eq \"$DS_DRAIN_EXIT\" ]; then outcome=drained\n"
    "elif [ \"$rc\" -eq 0 ]; then outcome=completed  # the store says nothing: as the run said\n"
    "elif [ \"$rc\" -gt 128 ]; then outcome=killed\n"
    "else outcome=failed; fi\n"
    "case $rc:$outcome in\n"
    "  0:*|\"$DS_DRAIN_EXIT\":drained|*:failed|*:killed) ;;\n"
    "  *) log \"launcher exit $rc, but the store is $state\" ;;\n"
    "esac\n"
    "cost=$(\"$DS_BIN\" chain \"$DS_STORE\" end --job \"$job\" --state \"$outcome\" \\\n"
    "         ${t_drain:+--drain-start \"$t_drain\"} 2>&1) || { log \"chain: ${cost%%$'\\n'*}\"; cost=; }\n"
    "case $outcome in\n"
    "  completed)\n"
    "    log \"sweep complete\"\n"
    "    [ -n \"$next\" ] && scancel \"$next\"\n"
    "    exit 0 ;;\n"
    "  drained)\n"
    "    if [ -n \"$next\" ]; then\n"
    "      log \"drained${cost:+ in $cost s}, resumable; follow-on job $next resumes\"\n"
    "      exit 0\n"
    "    fi\n"
    "    log \"drained${cost:+ in $cost s}, resumable, but no follow-on job: sbatch $DS_SCRIPT to resume\"\n"
    "    exit \"$DS_DRAIN_EXIT\" ;;\n"
    "  killed)\n"
    "    log \"stopped (exit $rc), resumable; follow-on job ${next:-(none)} resumes\"\n"
    "    exit \"$rc\" ;;\n"
    "  *)\n"
    "    if [ -n \"$nolaunch\" ]; then\n"
    "      log \"3 launches left $DS_STORE as it was (the errors above); cancelling follow-on job ${next:-(none)}; sbatch $DS_SCRIPT to resume once mended\"\n"
    "    else\n"
    "      log \"dynsweep failed (exit $rc); cancelling follow-on job ${next:-(none)}\"\n"
    "    fi\n"
    "    [ -n \"$next\" ] && scancel \"$next\"\n"
    "    exit \"$rc\" ;;\n"
    "esac\n";


static int sub_write_script(const sub_opts *o, const ds_sweep *sw, const char *sweep_abs,
                            const char *store_abs, const char *script, const char *bin) {
  char tmp[PATH_MAX + 16];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", script, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return ds_fail(DS_EIO, "%s: cannot write: %s", tmp, strerror(errno));
  char job[256];
  if (o->job_name) snprintf(job, sizeof job, "%s", o->job_name);
  else snprintf(job, sizeof job, "ds-%s", sw->name);
  const char *dir_end = strrchr(store_abs, '/');
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%.*s", dir_end == store_abs ? 1 : (int)(dir_end - store_abs), store_abs);

  fprintf(f, "#!/bin/bash\n");
  fprintf(f, "# Written by 'dynsweep submit' for sweep '%s' (%lld points).\n", sw->name,
          (long long)ds_sweep_npoints(sw));
  fprintf(f, "# Submit again (resumes the store):  sbatch %s\n", script);
  fprintf(f, "# Cancel the whole chain:           scancel --name=%s\n", job);
  fprintf(f, "#SBATCH --job-name=%s\n", job);
  if (o->min_nodes > 0 && o->min_nodes < o->nodes) fprintf(f, "#SBATCH --nodes=%ld-%ld\n", o->min_nodes, o->nodes);
  else fprintf(f, "#SBATCH --nodes=%ld\n", o->nodes > 0 ? o->nodes : 1);
  if (o->ntasks > 0) fprintf(f, "#SBATCH --ntasks=%ld\n", o->ntasks);
  if (o->ntasks_per_node > 0) fprintf(f, "#SBATCH --ntasks-per-node=%ld\n", o->ntasks_per_node);
  if (o->ntasks <= 0 && o->ntasks_per_node <= 0) {
    fprintf(f, "#SBATCH --exclusive\n");
    fprintf(f, "#SBATCH --ntasks-per-core=1\n");
  }
  fprintf(f, "#SBATCH --cpus-per-task=1\n");
  fprintf(f, "#SBATCH --time=%s\n", o->time);
  /* a backstop: the job's own drain timer, set from measured drain costs,
   * starts the drain (the script's step 2) */
  fprintf(f, "#SBATCH --signal=B:USR2@%ld\n", o->signal_s);
  /* not --requeue: after a node failure Slurm would hold the requeued job
   * 121 s and then keep it pending for its old node count (docs/slurm.md,
   * "Several nodes"); the follow-on (afterany) starts at once instead */
  fprintf(f, "#SBATCH --no-requeue\n");
  fprintf(f, "#SBATCH --open-mode=append\n");
  /* sbatch reads double-quoted values in #SBATCH lines; '%' is its pattern
   * character in file names ("%%" = a literal '%') */
  fprintf(f, "#SBATCH --output=\"");
  for (const char *c = store_abs; *c; c++) fputs(*c == '%' ? "%%" : (char[2]){*c, 0}, f);
  fprintf(f, ".slurm-%%j.out\"\n");
  fprintf(f, "#SBATCH --chdir=\"%s\"\n", dir);
  if (o->partition) fprintf(f, "#SBATCH --partition=%s\n", o->partition);
  if (o->account) fprintf(f, "#SBATCH --account=%s\n", o->account);
  if (o->qos) fprintf(f, "#SBATCH --qos=%s\n", o->qos);
  for (int i = 0; i < o->nextra; i++) fprintf(f, "#SBATCH %s\n", o->extra[i]);
  fprintf(f, "\n# ---- settings\n");
  fprintf(f, "DS_SWEEP=");
  sub_sq(f, sweep_abs);
  fprintf(f, "\nDS_STORE=");
  sub_sq(f, store_abs);
  fprintf(f, "\nDS_BIN=");
  sub_sq(f, bin);
  fprintf(f, "\nDS_SCRIPT=");
  sub_sq(f, script);
  fprintf(f, "\nDS_LAUNCHER=%s\n", o->launcher);
  fprintf(f, "DS_MPI=%s\n", o->mpi);
  /* mpirun takes the ranks from the allocation; root needs its flag */
  fprintf(f, "DS_MPIRUN_ARGS=(--bind-to core%s)\n", geteuid() == 0 ? " --allow-run-as-root" : "");
  fprintf(f, "DS_RUN_ARGS=(%s", o->quiet ? "--quiet" : "");
  for (int i = 0; i < o->nrunopt; i++) {
    if (i || o->quiet) fputc(' ', f);
    sub_sq(f, o->runopt[i]);
  }
  fprintf(f, ")\n");
  fprintf(f, "DS_MAX_JOBS=%ld\n", o->max_jobs);
  fprintf(f, "DS_DRAIN_EXIT=%d\n", DS_EXIT_DRAINED);
  fprintf(f, "DS_MARGIN_FIRST=%ld\n", o->signal_s);
  fprintf(f, "DS_MARGIN_FLOOR=%d\nDS_MARGIN_FACTOR=%d\nDS_MARGIN_SLACK=%d\n\n", SUB_MARGIN_FLOOR,
          SUB_MARGIN_FACTOR, SUB_MARGIN_SLACK);
  fputs(sub_body, f);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    unlink(tmp);
    return ds_fail(DS_EIO, "%s: cannot write: %s", tmp, strerror(errno));
  }
  if (chmod(tmp, 0755) || rename(tmp, script)) {
    int e = errno;
    unlink(tmp);
    return ds_fail(DS_EIO, "%s: cannot write: %s", script, strerror(e));
  }
  return DS_OK;
}

/* Runs sbatch --parsable SCRIPT; the job id goes to jobid. */
static int sub_sbatch(const char *script, char *jobid, size_t n) {
  int fd[2];
  if (pipe(fd)) return ds_fail(DS_EIO, "pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return ds_fail(DS_EIO, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    execlp("sbatch", "sbatch", "--parsable", script, (char *)NULL);
    fprintf(stderr, "dynsweep: submit: cannot run sbatch: %s (is Slurm installed and in PATH? "
            "--dry-run only writes the script)\n", strerror(errno));
    _exit(127);
  }
  close(fd[1]);
  char buf[256];
  size_t got = 0;
  ssize_t r;
  while ((r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0 || (r < 0 && errno == EINTR))
    if (r > 0) got += (size_t)r;
  close(fd[0]);
  buf[got] = 0;
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127) return ds_fail(DS_EIO, "sbatch could not be run");
    return ds_fail(DS_EIO, "sbatch failed (%s %d) for %s", WIFEXITED(st) ? "exit" : "signal",
                   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), script);
  }
  /* --parsable prints "jobid" or "jobid;cluster" */
  size_t k = strcspn(buf, ";\n\r ");
  buf[k] = 0;
  if (!k) return ds_fail(DS_EIO, "sbatch printed no job id for %s", script);
  snprintf(jobid, n, "%s", buf);
  return DS_OK;
}

static int sub_parse(int argc, char **argv, sub_opts *o) {
  memset(o, 0, sizeof *o);
  o->time = "1:00:00";
  o->launcher = "srun";
  o->mpi = "pmix";
  o->signal_s = -1;
  o->max_jobs = 100;
  const char *sig = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    char name[64];
    const char *val = NULL;
    /* --opt=value form */
    const char *eq = (a[0] == '-' && a[1] == '-') ? strchr(a, '=') : NULL;
    if (eq && (size_t)(eq - a) < sizeof name) {
      snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
      val = eq + 1;
    } else {
      snprintf(name, sizeof name, "%s", a);
    }
#define TAKES(s, l) (!strcmp(name, s) || !strcmp(name, l))
#define VALUE()                                                                                   \
  do {                                                                                            \
    if (!val) {                                                                                   \
      if (++i == argc) return sub_bad("%s needs a value", name);                                 \
      val = argv[i];                                                                              \
    }                                                                                             \
  } while (0)
    if (TAKES("-o", "--output")) { VALUE(); o->store = val; }
    else if (TAKES("-N", "--nodes")) {
      VALUE();
      if ((o->nodes = sub_num(val, 1, 100000)) < 0) return sub_bad("--nodes: expected a whole number >= 1, got '%s'", val);
    } else if (!strcmp(name, "--min-nodes")) {
      VALUE();
      if ((o->min_nodes = sub_num(val, 1, 100000)) < 0) return sub_bad("--min-nodes: expected a whole number >= 1, got '%s'", val);
    } else if (TAKES("-n", "--ntasks")) {
      VALUE();
      if ((o->ntasks = sub_num(val, 1, 10000000)) < 0) return sub_bad("--ntasks: expected a whole number >= 1, got '%s'", val);
    } else if (!strcmp(name, "--ntasks-per-node")) {
      VALUE();
      if ((o->ntasks_per_node = sub_num(val, 1, 100000)) < 0)
        return sub_bad("--ntasks-per-node: expected a whole number >= 1, got '%s'", val);
    } else if (TAKES("-t", "--time")) { VALUE(); o->time = val; }
    else if (TAKES("-p", "--partition")) { VALUE(); o->partition = val; }
    else if (TAKES("-A", "--account")) { VALUE(); o->account = val; }
    else if (!strcmp(name, "--qos")) { VALUE(); o->qos = val; }
    else if (TAKES("-J", "--job-name")) { VALUE(); o->job_name = val; }
    else if (!strcmp(name, "--launcher")) { VALUE(); o->launcher = val; }
    else if (!strcmp(name, "--mpi")) { VALUE(); o->mpi = val; }
    else if (!strcmp(name, "--signal-time")) { VALUE(); sig = val; }
    else if (!strcmp(name, "--dynsweep")) { VALUE(); o->bin = val; }
    else if (!strcmp(name, "--max-jobs")) {
      VALUE();
      if ((o->max_jobs = sub_num(val, 1, 100000)) < 0) return sub_bad("--max-jobs: expected a whole number >= 1, got '%s'", val);
    } else if (!strcmp(name, "--sbatch-option")) {
      VALUE();
      if (!*val || !sub_printable(val)) return sub_bad("--sbatch-option: expected one option on one line, got '%s'", val);
      if (o->nextra == SUB_MAX_EXTRA) return sub_bad("too many --sbatch-option (limit 32)%s", "");
      o->extra[o->nextra++] = val;
    } else if (!strcmp(name, "--run-option")) {
      VALUE();
      if (!*val || !sub_printable(val)) return sub_bad("--run-option: expected one argument on one line, got '%s'", val);
      if (o->nrunopt == SUB_MAX_EXTRA) return sub_bad("too many --run-option (limit 32)%s", "");
      o->runopt[o->nrunopt++] = val;
    } else if (!strcmp(name, "--max-attempts")) { /* passed on to 'dynsweep run' */
      VALUE();
      if (sub_num(val, 1, 1000) < 0) return sub_bad("--max-attempts: expected a whole number 1..1000, got '%s'", val);
      if (o->nrunopt + 2 > SUB_MAX_EXTRA) return sub_bad("too many --run-option (limit 32)%s", "");
      o->runopt[o->nrunopt++] = "--max-attempts";
      o->runopt[o->nrunopt++] = val;
    } else if (!strcmp(name, "--set")) { /* checked with the sweep, passed on to 'dynsweep run' */
      VALUE();
      if (!*val || !sub_printable(val)) return sub_bad("--set: expected KEY=VALUE on one line, got '%s'", val);
      if (o->nrunopt + 2 > SUB_MAX_EXTRA) return sub_bad("too many --run-option/--set (limit 32)%s", "");
      o->runopt[o->nrunopt++] = "--set";
      o->runopt[o->nrunopt++] = val;
      o->sets[o->nset++] = (char *)val;
    } else if (!strcmp(name, "--dry-run") && !val) o->dry_run = 1;
    else if (TAKES("-q", "--quiet") && !val) o->quiet = 1;
    else if (a[0] == '-') return sub_bad("unknown option '%s'", a);
    else if (!o->sweep) o->sweep = a;
    else return sub_bad("unexpected argument '%s'", a);
#undef TAKES
#undef VALUE
  }
  if (!o->sweep) return sub_bad("missing the sweep file%s", "");
  if (!o->store) return sub_bad("missing -o STORE.h5%s", "");
  if (o->ntasks > 0 && o->ntasks_per_node > 0) return sub_bad("give --ntasks or --ntasks-per-node, not both%s", "");
  if (o->min_nodes > (o->nodes > 0 ? o->nodes : 1)) {
    char m[64];
    snprintf(m, sizeof m, "%ld (--nodes %ld)", o->min_nodes, o->nodes > 0 ? o->nodes : 1);
    return sub_bad("--min-nodes %s: more than --nodes", m);
  }
  if (o->min_nodes > 0 && o->ntasks > 0)
    return sub_bad("--min-nodes needs --ntasks-per-node (or whole nodes), not --ntasks%s", "");
  if ((o->time_s = ds_submit_parse_time(o->time)) <= 0)
    return sub_bad("--time: expected a Slurm time limit such as 30, 2:00:00 or 1-12:00:00 "
                   "(MIN, MIN:SEC, H:MIN:SEC, D-H, D-H:MIN, D-H:MIN:SEC), got '%s'", o->time);
  if (o->time_s < 60) return sub_bad("--time: Slurm's smallest time limit is one minute, got '%s'", o->time);
  if (sig) {
    if ((o->signal_s = sub_num(sig, 1, 65535)) < 0)
      return sub_bad("--signal-time: expected seconds (1..65535), got '%s'", sig);
  } else {
    o->signal_s = o->time_s >= 600 ? 90 : o->time_s / 3;
  }
  if (o->signal_s >= o->time_s) {
    char msg[160];
    snprintf(msg, sizeof msg, "%ld s must be shorter than the time limit (%s = %ld s)", o->signal_s,
             o->time, o->time_s);
    return sub_bad("--signal-time: %s", msg);
  }
  if (strcmp(o->launcher, "srun") && strcmp(o->launcher, "mpirun"))
    return sub_bad("--launcher: expected srun or mpirun, got '%s'", o->launcher);
  struct { const char *what, *v; } names[] = {{"--partition", o->partition}, {"--account", o->account},
                                               {"--qos", o->qos}, {"--job-name", o->job_name},
                                               {"--mpi", o->mpi}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    if (names[k].v && !sub_safe_name(names[k].v)) {
      char msg[300];
      snprintf(msg, sizeof msg, "%s: use letters, digits and _ - . , + : only, got '%.200s'",
               names[k].what, names[k].v);
      return sub_bad("%s", msg);
    }
  }
  return DS_OK;
}

/* --dry-run: the plan estimate on the job's ranks, a --time to ask for and
 * the jobs of the chain at the given one (config/estimate.c). */
static void sub_dry_run_estimate(const sub_opts *o, const ds_sweep *sw) {
  ds_probe pr;
  ds_estimate est;
  char why[96];
  long ranks = o->ntasks, nodes = o->nodes > 0 ? o->nodes : 1;
  if (ranks > 0) snprintf(why, sizeof why, "--ntasks %ld", ranks);
  else if (o->ntasks_per_node > 0) {
    ranks = o->ntasks_per_node * nodes;
    snprintf(why, sizeof why, "--ntasks-per-node %ld x %ld node(s)", o->ntasks_per_node, nodes);
  } else {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cores = cores > 0 ? cores : 1;
    ranks = cores * nodes;
    snprintf(why, sizeof why, "%ld core(s) x %ld node(s), as on this host", cores, nodes);
  }
  ds_probe_get(0, &pr);
  if (ds_sweep_estimate(sw, &pr, 1024 * 1048576.0, &est) != DS_OK) {
    fprintf(stderr, "dynsweep: submit: no time estimate: %s\n", ds_errmsg());
    return;
  }
  ds_point p0; /* a map whose net goes through tiles: its pixels at the rate measured in tiles */
  double tile_sec = 0;
  if (sw->map && est.n > 0 && ds_sweep_point(sw, 0, &p0) == DS_OK)
    tile_sec = ds_tile_seconds(sw, &p0, 64, 100) * (double)p0.cfg.train.steps;
  if (tile_sec > 0) {
    est.core_s = 0;
    for (int64_t i = 0; i < est.n; i++) est.core_s += est.sec[i] = tile_sec;
    printf("map: %.3g s a pixel, measured in tiles here (as `dynsweep plan`), every pixel\n"
           "  trained (a refined map trains fewer)\n", tile_sec);
  }
  ds_estimate_print_submit(stdout, &est, &pr, ranks > 1 << 30 ? 1 << 30 : (int)ranks, why, o->time,
                           strcmp(o->time, "1:00:00") != 0, o->time_s, o->signal_s,
                           o->signal_s != (o->time_s >= 600 ? 90 : o->time_s / 3), o->max_jobs);
  ds_estimate_free(&est);
}

int ds_cli_submit(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(ds_usage_submit, stdout);
      return 0;
    }
  sub_opts o;
  int rc = sub_parse(argc, argv, &o);
  if (rc) return rc;

  /* 1. the sweep file, exactly as `dynsweep run` will read it */
  ds_sweep sw;
  if ((rc = ds_sweep_load_set(o.sweep, o.nset, o.sets, &sw)) != DS_OK) {
    fprintf(stderr, "%s\n", ds_errmsg());
    return ds_exit_code(rc);
  }
  char sweep_abs[PATH_MAX], store_abs[PATH_MAX], script[PATH_MAX], bin[PATH_MAX];
  rc = sub_abspath(o.sweep, sweep_abs, sizeof sweep_abs);
  if (rc == DS_OK) rc = sub_abspath(o.store, store_abs, sizeof store_abs);
  /* the paths go into #SBATCH lines as "..." values */
  const char *paths[2] = {sweep_abs, store_abs};
  for (int k = 0; rc == DS_OK && k < 2; k++)
    if (!sub_printable(paths[k]) || strpbrk(paths[k], "\"\\"))
      rc = ds_fail(DS_EINPUT, "%s: a path with '\"', '\\' or control characters cannot go into a "
                   "Slurm job script; rename or move it", paths[k]);
  if (rc == DS_OK && (size_t)snprintf(script, sizeof script, "%s.sbatch", store_abs) >= sizeof script)
    rc = ds_fail(DS_EINPUT, "%s: path too long", o.store);
  if (rc == DS_OK && o.bin) {
    if (!realpath(o.bin, bin) || access(bin, X_OK))
      rc = ds_fail(DS_EINPUT, "--dynsweep %s: not an executable: %s", o.bin, strerror(errno));
  } else if (rc == DS_OK) {
    ssize_t n = readlink("/proc/self/exe", bin, sizeof bin - 1);
    if (n <= 0) rc = ds_fail(DS_EIO, "cannot find the dynsweep executable: %s", strerror(errno));
    else bin[n] = 0;
  }
  if (rc == DS_OK) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", store_abs);
    *strrchr(dir, '/') = 0;
    if (access(dir[0] ? dir : "/", W_OK))
      rc = ds_fail(DS_EINPUT, "%s: cannot write in directory %s: %s", o.store, dir[0] ? dir : "/",
                   strerror(errno));
  }
  if (rc == DS_OK) rc = sub_write_script(&o, &sw, sweep_abs, store_abs, script, bin);
  int64_t npoints = rc == DS_OK ? ds_sweep_npoints(&sw) : 0;
  if (rc == DS_OK && o.dry_run) sub_dry_run_estimate(&o, &sw);
  ds_sweep_free(&sw);
  if (rc != DS_OK) {
    fprintf(stderr, "dynsweep: submit: %s\n", ds_errmsg());
    return ds_exit_code(rc);
  }
  if (o.dry_run) {
    printf("wrote %s (%lld points); not submitted (--dry-run). To submit:\n  sbatch %s\n", script,
           (long long)npoints, script);
    return 0;
  }
  char jobid[64];
  if ((rc = sub_sbatch(script, jobid, sizeof jobid)) != DS_OK) {
    fprintf(stderr, "dynsweep: submit: %s\n", ds_errmsg());
    return ds_exit_code(rc);
  }
  printf("submitted job %s: %lld points, store %s\n  script %s\n  output %s.slurm-%s.out\n", jobid,
         (long long)npoints, store_abs, script, store_abs, jobid);
  return 0;
}
