/*
 * transport.h: how the ranks' messages travel. The phases of a
 * distributed tick (world.c) see only this: one exchange a tick, in which
 * every rank hands one message for each other rank and gets one from
 * each, and now and then a sum over the ranks (the load, to move the
 * strips). transport_mpi.c implements it over an MPI communicator; another
 * engine (NNG, ZeroMQ) would be another file behind the same three calls.
 */
#ifndef AOI_TRANSPORT_H
#define AOI_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

typedef struct transport transport;

struct transport {
  int rank, ranks;
  /* Sends out[q] to every peer q != rank and receives each peer's
     message into in[q] (its buffer reused from call to call); adds the
     time spent waiting to *wait_ns. 0, AOI_ENOMEM, or AOI_EPEER (a peer
     failed or did not answer in time). */
  int (*exchange)(transport *t, const wire_buf *out, wire_buf *in,
                  uint64_t *wait_ns);
  /* Sums values[0 .. n - 1] over the ranks, in place, every rank getting
     the same sums. 0, or AOI_EPEER as exchange. */
  int (*sum)(transport *t, double *values, size_t n);
  /* 0 when every rank passed the same `value`, else AOI_EPEER. */
  int (*agree)(transport *t, uint64_t value);
  void (*destroy)(transport *t);
};

#endif /* AOI_TRANSPORT_H */
