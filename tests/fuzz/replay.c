/* replay.c -- runs the fuzz harness (fuzz_sweep.c) on every file named on the
 * command line and every regular file in the directories named there, in a
 * normal (or sanitizer) build without libFuzzer. ctest runs it over
 * tests/fuzz/corpus, tests/fuzz/crashes and the project's sweep files
 * (test fuzz_replay, label unit): a reproducer of a fixed crash stays fixed.
 * Exit 0 when every input ran (parse errors are fine), 1 on no input at all. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      } else {
        buf = nb;
      }
    }
  }
  fclose(f);
  if (!buf) return -1;
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 1;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  long ran = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st)) {
      fprintf(stderr, "fuzz_replay: %s: no such file or directory\n", argv[i]);
      bad++;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      long r = replay_file(argv[i]);
      if (r < 0) bad++;
      else ran += r;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) {
      bad++;
      continue;
    }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      if (nn == cap) {
        char **nb = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
        if (!nb) break;
        names = nb;
      }
      size_t l = strlen(argv[i]) + strlen(e->d_name) + 2;
      names[nn] = malloc(l);
      if (!names[nn]) break;
      snprintf(names[nn++], l, "%s/%s", argv[i], e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, by_name);
    for (size_t k = 0; k < nn; k++) {
      if (!stat(names[k], &st) && S_ISREG(st.st_mode) && !strstr(names[k], "README")) {
        long r = replay_file(names[k]);
        if (r < 0) bad++;
        else ran += r;
      }
      free(names[k]);
    }
    free(names);
  }
  printf("fuzz_replay: %ld inputs replayed, %ld unreadable\n", ran, bad);
  return ran > 0 && bad == 0 ? 0 : 1;
}
