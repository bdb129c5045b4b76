/* launcher.c -- `dynsweep`: a static, libc-only front door that execs the
 * real program (libexec/dynsweep next to it, or ../libexec/dynsweep).
 *
 * Why: the real program links some 50 shared libraries (Open MPI, HDF5,
 * ScaLAPACK, OpenBLAS and theirs), and loading them takes ~10 ms before any
 * code of ours can install a signal handler. A drain signal (SIGUSR1 or
 * SIGTERM: mpirun and srun forward them to every rank) in that window would
 * kill a rank of `dynsweep run` instead of draining it. This launcher blocks
 * both signals before anything else (from DT_PREINIT_ARRAY, microseconds
 * after exec; it is statically linked, so there is nothing to load), and a
 * blocked signal stays pending across execve(2). On x86-64 the block is the
 * very first thing the process does: the entry point is ds_launcher_start, a
 * three-instruction rt_sigprocmask before glibc's _start (glibc's static
 * start-up takes ~0.1-0.2 ms before DT_PREINIT_ARRAY runs, measured with a
 * signal sent right after execve). The real program installs
 * its handlers first thing (src/main.c early_signals) and unblocks them,
 * then the pending signal drains it. Every other command unblocks them at
 * once and keeps the default actions. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void block_drain_signals(int argc, char **argv, char **envp) {
  (void)argc, (void)argv, (void)envp;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGUSR1);
  sigprocmask(SIG_BLOCK, &s, NULL);
}
__attribute__((section(".preinit_array"), used)) static void (*const block_p)(int, char **, char **) =
    block_drain_signals;

#if defined(__x86_64__) && defined(__linux__)
/* Entry point (CMakeLists.txt: -Wl,-e,ds_launcher_start): block SIGTERM and
 * SIGUSR1 with one raw rt_sigprocmask(SIG_BLOCK, &mask, NULL, 8) system call,
 * then continue at glibc's _start with the registers and stack the kernel
 * gave us (rdx, the only register _start reads, is 0 for a static binary
 * started by the kernel; the syscall clobbers only rax, rcx, r11). */
__asm__(".text\n"
        ".globl ds_launcher_start\n"
        ".type ds_launcher_start,@function\n"
        "ds_launcher_start:\n"
        "  mov $14, %eax\n"             /* SYS_rt_sigprocmask */
        "  xor %edi, %edi\n"            /* SIG_BLOCK */
        "  lea ds_launcher_mask(%rip), %rsi\n"
        "  xor %edx, %edx\n"            /* no old set */
        "  mov $8, %r10d\n"             /* sizeof the kernel's sigset */
        "  syscall\n"
        "  xor %edx, %edx\n"
        "  jmp _start\n"
        ".size ds_launcher_start, .-ds_launcher_start\n"
        ".section .rodata\n"
        ".align 8\n"
        "ds_launcher_mask:\n"
        "  .quad (1 << (15 - 1)) | (1 << (10 - 1))\n" /* SIGTERM 15, SIGUSR1 10 */
        ".text\n");
#endif

int main(int argc, char **argv) {
  (void)argc;
  char self[PATH_MAX], core[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0 || (size_t)n >= sizeof self - 1) {
    fprintf(stderr, "dynsweep: cannot find my own path (/proc/self/exe): %s\n", strerror(errno));
    return 1;
  }
  self[n] = 0;
  char *slash = strrchr(self, '/');
  *slash = 0;
  static const char *where[] = {"%s/libexec/dynsweep", "%s/../libexec/dynsweep"};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
    snprintf(core, sizeof core, where[i], self);
    if (access(core, X_OK) == 0) {
      execv(core, argv);
      fprintf(stderr, "dynsweep: cannot run %s: %s\n", core, strerror(errno));
      return 1;
    }
  }
  fprintf(stderr, "dynsweep: the program itself is missing: looked for %s/libexec/dynsweep and "
          "%s/../libexec/dynsweep (rebuild, or reinstall both files)\n", self, self);
  return 1;
}
