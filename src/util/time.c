/* time.c -- clocks, sleeping and log lines. */
#include <stdarg.h>
#include <sys/resource.h>
#include <time.h>

#include "dynsweep/util.h"

double ds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

double ds_cpu_time(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec + ru.ru_stime.tv_sec +
         1e-6 * ru.ru_stime.tv_usec;
}

void ds_iso_time(char *buf, size_t n) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void ds_sleep(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

void ds_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_console_vline("dynsweep: ", fmt, ap);
  va_end(ap);
}

void ds_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ds_console_vline("dynsweep: warning: ", fmt, ap);
  va_end(ap);
}
