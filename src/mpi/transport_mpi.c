/*
 * transport_mpi.c: the exchange over MPI. The byte counts go in one
 * MPI_Ialltoall, the messages in one MPI_Ialltoallv, on a duplicate of the
 * host's communicator whose errors return instead of aborting. Each is
 * waited for by polling MPI_Test against the deadline, so a rank that died
 * or hangs makes the others fail with AOI_EPEER after the timeout instead
 * of waiting forever (Open MPI's runtime usually stops the job sooner).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aoi.h"
#include "transport.h"
#include "transport_mpi.h"

typedef struct mpi_transport {
  transport base;
  MPI_Comm comm;
  unsigned timeout_ms;
  int *send_counts, *send_displs, *recv_counts, *recv_displs;
  unsigned char *send, *recv;
  size_t send_capacity, recv_capacity;
} mpi_transport;

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits for `request` until the deadline: 0, or AOI_EPEER. */
static int wait_for(MPI_Request *request, uint64_t deadline)
{
  for (unsigned spin = 0;; spin++) {
    int done = 0;
    if (MPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return AOI_EPEER;
    if (done)
      return 0;
    if (now_ns() > deadline)
      return AOI_EPEER; /* the request is left: the world is unusable */
    if (spin > 64)
      sched_yield();
  }
}

static int reserve(unsigned char **p, size_t *cap, size_t need)
{
  if (need <= *cap)
    return 0;
  unsigned char *q = realloc(*p, need);
  if (q == NULL)
    return AOI_ENOMEM;
  *p = q;
  *cap = need;
  return 0;
}

static int exchange(transport *base, const wire_buf *out, wire_buf *in,
                    uint64_t *wait_ns)
{
  mpi_transport *t = (mpi_transport *)base;
  int n = base->ranks;
  size_t total = 0;
  for (int q = 0; q < n; q++) {
    size_t size = q == base->rank ? 0 : out[q].size;
    if (size > INT_MAX || total > (size_t)INT_MAX - size)
      return AOI_ENOMEM; /* beyond what one MPI count can say */
    t->send_counts[q] = (int)size;
    t->send_displs[q] = (int)total;
    total += size;
  }
  int rc = reserve(&t->send, &t->send_capacity, total + 1);
  if (rc != 0)
    return rc;
  for (int q = 0; q < n; q++)
    if (t->send_counts[q] > 0)
      memcpy(t->send + t->send_displs[q], out[q].data,
             (size_t)t->send_counts[q]);
  uint64_t start = now_ns();
  uint64_t deadline = start + (uint64_t)t->timeout_ms * 1000000u;
  MPI_Request request;
  if (MPI_Ialltoall(t->send_counts, 1, MPI_INT, t->recv_counts, 1, MPI_INT,
                    t->comm, &request) != MPI_SUCCESS ||
      wait_for(&request, deadline) != 0)
    return AOI_EPEER;
  size_t got = 0;
  for (int q = 0; q < n; q++) {
    if (t->recv_counts[q] < 0 || got > (size_t)INT_MAX - t->recv_counts[q])
      return AOI_EPEER;
    t->recv_displs[q] = (int)got;
    got += (size_t)t->recv_counts[q];
  }
  if ((rc = reserve(&t->recv, &t->recv_capacity, got + 1)) != 0)
    return rc;
  if (MPI_Ialltoallv(t->send, t->send_counts, t->send_displs, MPI_BYTE,
                     t->recv, t->recv_counts, t->recv_displs, MPI_BYTE,
                     t->comm, &request) != MPI_SUCCESS ||
      wait_for(&request, deadline) != 0)
    return AOI_EPEER;
  *wait_ns += now_ns() - start;
  for (int q = 0; q < n; q++) {
    in[q].size = 0;
    in[q].records = 0;
    size_t size = (size_t)t->recv_counts[q];
    if (size == 0)
      continue;
    if (reserve(&in[q].data, &in[q].capacity, size) != 0)
      return AOI_ENOMEM;
    memcpy(in[q].data, t->recv + t->recv_displs[q], size);
    in[q].size = size;
  }
  return 0;
}

static int sum(transport *base, double *values, size_t n)
{
  mpi_transport *t = (mpi_transport *)base;
  if (n > INT_MAX)
    return AOI_ENOMEM;
  uint64_t deadline = now_ns() + (uint64_t)t->timeout_ms * 1000000u;
  MPI_Request request;
  if (MPI_Iallreduce(MPI_IN_PLACE, values, (int)n, MPI_DOUBLE, MPI_SUM,
                     t->comm, &request) != MPI_SUCCESS ||
      wait_for(&request, deadline) != 0)
    return AOI_EPEER;
  return 0;
}

static int agree(transport *base, uint64_t value)
{
  mpi_transport *t = (mpi_transport *)base;
  unsigned long long v[2] = {value, ~value}, r[2];
  if (MPI_Allreduce(v, r, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, t->comm) !=
      MPI_SUCCESS)
    return AOI_EPEER;
  /* every rank equal: the max of v and of ~v are v and ~v */
  return r[0] == value && r[1] == (unsigned long long)~value ? 0 : AOI_EPEER;
}

static void destroy(transport *base)
{
  mpi_transport *t = (mpi_transport *)base;
  if (t == NULL)
    return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && t->comm != MPI_COMM_NULL)
    MPI_Comm_free(&t->comm);
  free(t->send_counts);
  free(t->send);
  free(t->recv);
  free(t);
}

int transport_mpi_create(MPI_Comm comm, unsigned timeout_ms, transport **out)
{
  mpi_transport *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return AOI_ENOMEM;
  t->comm = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &t->comm) != MPI_SUCCESS) {
    free(t);
    return AOI_ESYS;
  }
  MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(t->comm, &t->base.rank);
  MPI_Comm_size(t->comm, &t->base.ranks);
  t->timeout_ms = timeout_ms;
  t->send_counts = calloc(4 * (size_t)t->base.ranks, sizeof(int));
  if (t->send_counts == NULL) {
    destroy(&t->base);
    return AOI_ENOMEM;
  }
  t->send_displs = t->send_counts + t->base.ranks;
  t->recv_counts = t->send_displs + t->base.ranks;
  t->recv_displs = t->recv_counts + t->base.ranks;
  t->base.exchange = exchange;
  t->base.sum = sum;
  t->base.agree = agree;
  t->base.destroy = destroy;
  *out = &t->base;
  return 0;
}
