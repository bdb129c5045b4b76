/* wire.c -- rank 0's side of the messages (tags: state.h): waiting for the
 * next one without burning a core, receiving one of unknown length. Used by
 * the row dispatcher, the worker loop and the map scheduler alike. */
#include "state.h"

/* Waits for a message without burning a core: probe, then sleep with an
 * exponential back-off from 50 us to at most 20 ms. Before sleeping, the
 * journal gets its group commit (fsync at most every 0.5 s, ds_store_commit).
 * Returns 0 after ~0.25 s without a message, so the
 * caller can do its periodic work. *fatal != 0: no commit; a failed commit
 * sets it (the caller records the error). Rank 0 of a map sweep waits here
 * too (maps.c). *pace is the caller's (sc_pace: the message rate so far). */
int sc_wait_message(sc_pace *pace, ds_store *store, int *fatal, MPI_Comm comm, MPI_Status *st) {
  /* the longest nap follows the message rate: a quarter of the typical gap
   * between messages (points of a few ms: naps of ~0.1-1 ms, so a worker
   * does not wait for rank 0 to wake up), 20 ms for long points */
  double nap = 50e-6, t0 = ds_now(), cap = pace->gap / 4;
  cap = cap < 50e-6 ? 50e-6 : cap > 20e-3 ? 20e-3 : cap;
  for (;;) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, st);
    if (flag) {
      double now = ds_now();
      if (pace->last_msg > 0) pace->gap = 0.9 * pace->gap + 0.1 * (now - pace->last_msg);
      pace->last_msg = now;
      return 1;
    }
    if (!*fatal && ds_store_commit(store) != DS_OK) *fatal = 1; /* group commit */
    if (ds_now() - t0 > 0.25) return 0;
    ds_sleep(nap);
    nap = nap * 2 < cap ? nap * 2 : cap;
  }
}

char *sc_recv_bytes(MPI_Comm comm, int src, int tag, int *len) {
  MPI_Status st;
  MPI_Probe(src, tag, comm, &st);
  MPI_Get_count(&st, MPI_BYTE, len);
  char *buf = malloc(*len ? (size_t)*len : 1);
  if (!buf) {
    ds_fail(DS_ENOMEM, "out of memory receiving %d bytes", *len);
    char dummy[1];
    MPI_Recv(dummy, 0, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE); /* truncation error */
    return NULL;
  }
  MPI_Recv(buf, *len, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE);
  return buf;
}
