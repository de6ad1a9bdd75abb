/*
 * replay_mpi.c: the replay of a trace on one world spread over the ranks
 * of MPI_COMM_WORLD (aoi_mpi.h), as aoi-replay does it when built with
 * -DAOI_MPI=ON and run under mpirun. Rank 0 reads the trace and sends it
 * to every rank; each rank reads every line. An operation is applied by
 * the rank that owns its entity at that moment (aoi_mpi_owns), an add by
 * the rank whose strip holds its position; every rank keeps the set of
 * live ids, so that all of them agree on `exists` and `noent` without
 * asking each other. After each tick, rank 0 gathers every rank's events
 * and prints them in watcher order; at the end it prints the rejected
 * lines of every rank in line order. The output is byte for byte the one
 * process's.
 */
#include "replay_mpi.h"

#define _POSIX_C_SOURCE 200809L /* SIGKILL */

#include <inttypes.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "aoi_mpi.h"
#include "trace.h"

typedef struct text_buf {
  char *data;
  size_t length, capacity;
} text_buf;

/* A rejected line: its API error, or SYNTAX. */
typedef struct rejection {
  unsigned long line;
  int rc;
} rejection;

#define SYNTAX 1

typedef struct watcher_text {
  uint64_t id, at, length; /* its lines: `length` bytes from `at` */
} watcher_text;

typedef struct mreplay {
  aoi_config config;
  aoi_mpi_config mpi;
  aoi_mpi_world *world;
  int rank, ranks;
  int config_locked;
  /* live ids: an open-addressed set */
  uint64_t *live;
  unsigned char *used;
  size_t live_capacity, live_count;
  /* this tick's events: text, and per watcher its id and where it starts */
  text_buf events;
  watcher_text *watchers;
  size_t watcher_count, watcher_capacity;
  rejection *rejected;
  size_t rejected_count, rejected_capacity;
  FILE *out, *err;
  unsigned long ticks;
  unsigned long kill_tick; /* AOI_REPLAY_KILL names this rank: die then */
  unsigned long hang_tick; /* AOI_REPLAY_HANG names it: stop answering */
} mreplay;

static void die(mreplay *r, const char *what, int rc)
{
  fflush(r->out);
  fprintf(r->err, "aoi-replay: rank %d: %s: %s\n", r->rank, what,
          aoi_strerror(rc));
  fflush(r->err);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

static void *grow(mreplay *r, void *p, size_t *cap, size_t need, size_t size)
{
  if (need <= *cap)
    return p;
  size_t c = *cap < 64 ? 64 : *cap;
  while (c < need)
    c *= 2;
  void *q = realloc(p, c * size);
  if (q == NULL)
    die(r, "replay", AOI_ENOMEM);
  *cap = c;
  return q;
}

static uint64_t mix(uint64_t x)
{
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

static size_t live_slot(const mreplay *r, uint64_t id)
{
  size_t mask = r->live_capacity - 1;
  size_t i = mix(id) & mask;
  while (r->used[i] && r->live[i] != id)
    i = (i + 1) & mask;
  return i;
}

static int is_live(const mreplay *r, uint64_t id)
{
  if (r->live_capacity == 0)
    return 0;
  size_t i = live_slot(r, id);
  return r->used[i] == 1;
}

/* Marks id live (1) or dead (2: a tombstone) */
static void set_live(mreplay *r, uint64_t id, int live)
{
  if ((r->live_count + 1) * 2 > r->live_capacity) {
    size_t old = r->live_capacity;
    uint64_t *keys = r->live;
    unsigned char *used = r->used;
    r->live_capacity = old == 0 ? 1024 : 2 * old;
    r->live = calloc(r->live_capacity, sizeof(uint64_t));
    r->used = calloc(r->live_capacity, 1);
    if (r->live == NULL || r->used == NULL)
      die(r, "replay", AOI_ENOMEM);
    r->live_count = 0;
    for (size_t i = 0; i < old; i++)
      if (used[i] == 1) {
        size_t j = live_slot(r, keys[i]);
        r->used[j] = 1;
        r->live[j] = keys[i];
        r->live_count++;
      }
    free(keys);
    free(used);
  }
  size_t i = live_slot(r, id);
  if (!r->used[i])
    r->live_count++;
  r->used[i] = live ? 1 : 2;
  r->live[i] = id;
}

static void reject(mreplay *r, unsigned long line, int rc)
{
  if (rc == SYNTAX && r->rank != 0)
    return; /* every rank parsed the same line: rank 0 tells */
  r->rejected = grow(r, r->rejected, &r->rejected_capacity,
                     r->rejected_count + 1, sizeof(rejection));
  r->rejected[r->rejected_count++] = (rejection){line, rc};
}

static void take(void *user, uint64_t watcher, uint64_t tag,
                 const aoi_event *events, size_t count)
{
  mreplay *r = user;
  (void)tag;
  r->watchers = grow(r, r->watchers, &r->watcher_capacity,
                     r->watcher_count + 1, sizeof(watcher_text));
  size_t at = r->events.length;
  for (size_t j = 0; j < count; j++) {
    r->events.data = grow(r, r->events.data, &r->events.capacity,
                          r->events.length + 160, 1);
    r->events.length += (size_t)trace_format_event(
        r->events.data + r->events.length, 160, watcher, &events[j]);
  }
  r->watchers[r->watcher_count++] =
      (watcher_text){watcher, at, r->events.length - at};
}

static int by_watcher(const void *a, const void *b)
{
  uint64_t x = ((const watcher_text *)a)->id,
           y = ((const watcher_text *)b)->id;
  return x < y ? -1 : x > y;
}

/* Rank 0 prints the tick's events of every rank, watchers ascending. */
static void print_tick(mreplay *r)
{
  r->events.length = 0;
  r->watcher_count = 0;
  /* the fault test's (tests/mpi-fault.sh) */
  if (r->kill_tick == r->ticks + 1)
    raise(SIGKILL);
  if (r->hang_tick == r->ticks + 1)
    for (;;)
      pause(); /* until the job is stopped */
  int rc = aoi_mpi_tick(r->world);
  if (rc != 0)
    die(r, "aoi_mpi_tick", rc);
  if ((rc = aoi_mpi_deliver(r->world, take, r)) != 0)
    die(r, "aoi_mpi_deliver", rc);
  r->ticks++;
  qsort(r->watchers, r->watcher_count, sizeof(watcher_text), by_watcher);
  /* per rank: its text's bytes, and its watchers' bytes */
  int mine[2] = {(int)r->events.length,
                 (int)(r->watcher_count * sizeof(watcher_text))};
  int *counts = NULL, *bytes = NULL, *bdisp = NULL, *ibytes = NULL,
      *idisp = NULL;
  char *text = NULL;
  watcher_text *index = NULL;
  if (r->rank == 0) {
    /* the gathered pairs, then each rank's bytes and offsets of both */
    if ((counts = calloc(6 * (size_t)r->ranks, sizeof(int))) == NULL)
      die(r, "replay", AOI_ENOMEM);
    bytes = counts + 2 * r->ranks;
    bdisp = bytes + r->ranks;
    ibytes = bdisp + r->ranks;
    idisp = ibytes + r->ranks;
  }
  MPI_Gather(mine, 2, MPI_INT, counts, 2, MPI_INT, 0, MPI_COMM_WORLD);
  if (r->rank == 0) {
    size_t tb = 0, ti = 0;
    for (int q = 0; q < r->ranks; q++) {
      bytes[q] = counts[2 * q];
      ibytes[q] = counts[2 * q + 1];
      bdisp[q] = (int)tb;
      idisp[q] = (int)ti;
      tb += (size_t)bytes[q];
      ti += (size_t)ibytes[q];
    }
    text = malloc(tb + 1);
    index = malloc(ti + sizeof(watcher_text));
    if (text == NULL || index == NULL)
      die(r, "replay", AOI_ENOMEM);
  }
  MPI_Gatherv(r->events.data, mine[0], MPI_CHAR, text, bytes, bdisp, MPI_CHAR,
              0, MPI_COMM_WORLD);
  MPI_Gatherv(r->watchers, mine[1], MPI_BYTE, index, ibytes, idisp, MPI_BYTE,
              0, MPI_COMM_WORLD);
  if (r->rank == 0) {
    fprintf(r->out, "tick %lu\n", r->ticks);
    /* a merge of the ranks' watcher lists, each ascending */
    int *next = calloc((size_t)r->ranks, sizeof(int));
    if (next == NULL)
      die(r, "replay", AOI_ENOMEM);
    for (;;) {
      const watcher_text *best = NULL;
      int from = -1;
      for (int q = 0; q < r->ranks; q++) {
        int n = ibytes[q] / (int)sizeof(watcher_text);
        const watcher_text *v = index + idisp[q] / sizeof(watcher_text);
        if (next[q] < n && (best == NULL || v[next[q]].id < best->id)) {
          best = &v[next[q]];
          from = q;
        }
      }
      if (best == NULL)
        break;
      next[from]++;
      fwrite(text + bdisp[from] + best->at, 1, best->length, r->out);
    }
    free(next);
  }
  free(counts);
  free(text);
  free(index);
}

static int apply_owned(aoi_mpi_world *w, const trace_cmd *cmd)
{
  switch (cmd->kind) {
  case TRACE_MOVE:
    return aoi_mpi_move(w, cmd->id, cmd->x, cmd->y);
  case TRACE_RADIUS:
    return aoi_mpi_set_radius(w, cmd->id, cmd->radius);
  case TRACE_LAYERS:
    return aoi_mpi_set_layers(w, cmd->id, cmd->layers, cmd->interest);
  case TRACE_APPEAL:
    return aoi_mpi_set_appeal(w, cmd->id, cmd->appeal);
  case TRACE_CAP:
    return aoi_mpi_set_cap(w, cmd->id, cmd->cap);
  case TRACE_REMOVE:
    return aoi_mpi_remove(w, cmd->id);
  default:
    return 0;
  }
}

static void apply_line(mreplay *r, const char *line_text, size_t length,
                       unsigned long line)
{
  trace_cmd cmd;
  if (memchr(line_text, '\0', length) != NULL ||
      trace_parse_line(line_text, &cmd) != 0) {
    reject(r, line, SYNTAX);
    return;
  }
  if (cmd.kind == TRACE_NONE)
    return;
  if (trace_is_config(cmd.kind)) {
    if (r->config_locked || trace_apply_config(&r->config, &cmd) != 0)
      reject(r, line, SYNTAX);
    else if (r->world != NULL) {
      aoi_mpi_destroy(r->world); /* empty: made again with the new config */
      r->world = NULL;
    }
    return;
  }
  if (r->world == NULL) {
    int rc = aoi_mpi_create(&r->config, &r->mpi, MPI_COMM_WORLD, &r->world);
    if (rc != 0)
      die(r, "aoi_mpi_create", rc);
    /* made again after ticks of an empty one: as many ticks, so that its
       tick numbers are the printed ones (move-every's rate reads them) */
    for (unsigned long t = 0; t < r->ticks; t++)
      if ((rc = aoi_mpi_tick(r->world)) != 0)
        die(r, "aoi_mpi_tick", rc);
  }
  if (cmd.kind == TRACE_TICK) {
    print_tick(r);
    return;
  }
  if (cmd.kind == TRACE_ADD) {
    if (is_live(r, cmd.id)) {
      if (r->rank == 0)
        reject(r, line, AOI_EEXIST);
      return;
    }
    aoi_entity e = {cmd.id,     cmd.id,    cmd.x,      cmd.y,
                    cmd.radius, cmd.flags, cmd.layers, cmd.interest};
    int rc = aoi_mpi_add(r->world, &e);
    if (rc == 0 || rc == AOI_EREMOTE) {
      set_live(r, cmd.id, 1);
      r->config_locked = 1;
    } else if (trace_error_code(rc) == NULL) {
      die(r, "aoi_mpi_add", rc);
    } else if (r->rank == 0) {
      reject(r, line, rc); /* every rank saw the same */
    }
    return;
  }
  if (!is_live(r, cmd.id)) {
    if (r->rank == 0)
      reject(r, line, AOI_ENOENT);
    return;
  }
  if (cmd.kind == TRACE_REMOVE)
    set_live(r, cmd.id, 0);
  if (!aoi_mpi_owns(r->world, cmd.id))
    return;
  int rc = apply_owned(r->world, &cmd);
  if (rc != 0) {
    if (trace_error_code(rc) == NULL)
      die(r, "operation", rc);
    reject(r, line, rc);
  }
}

static int by_line(const void *a, const void *b)
{
  unsigned long x = ((const rejection *)a)->line,
                y = ((const rejection *)b)->line;
  return x < y ? -1 : x > y;
}

/* Rank 0 prints every rank's rejected lines in line order; the exit
   status, the same on every rank. */
static int print_rejected(mreplay *r)
{
  int mine = (int)r->rejected_count;
  int *counts = NULL, *displs = NULL;
  rejection *all = NULL;
  int total = 0;
  if (r->rank == 0) {
    counts = calloc(2 * (size_t)r->ranks, sizeof(int));
    if (counts == NULL)
      die(r, "replay", AOI_ENOMEM);
    displs = counts + r->ranks;
  }
  MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (r->rank == 0) {
    for (int q = 0; q < r->ranks; q++) {
      displs[q] = total * (int)sizeof(rejection);
      total += counts[q];
      counts[q] *= (int)sizeof(rejection);
    }
    all = malloc(((size_t)total + 1) * sizeof(rejection));
    if (all == NULL)
      die(r, "replay", AOI_ENOMEM);
  }
  MPI_Gatherv(r->rejected, mine * (int)sizeof(rejection), MPI_BYTE, all,
              counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (r->rank == 0) {
    qsort(all, (size_t)total, sizeof(rejection), by_line);
    for (int i = 0; i < total; i++)
      fprintf(r->err, "error %lu %s\n", all[i].line,
              all[i].rc == SYNTAX ? "syntax" : trace_error_code(all[i].rc));
  }
  MPI_Bcast(&total, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(counts);
  free(all);
  return total > 0 ? 1 : 0;
}

/* The TICK of "RANK:TICK" when RANK is `rank`, else 0 (never). */
static unsigned long fault_tick(const char *text, int rank)
{
  int at;
  unsigned long tick;
  if (text == NULL || sscanf(text, "%d:%lu", &at, &tick) != 2 || at != rank)
    return 0;
  return tick;
}

int replay_mpi_run(FILE *in, const char *name, FILE *out, FILE *err,
                   const replay_options *options)
{
  mreplay r;
  memset(&r, 0, sizeof r);
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.ranks);
  aoi_config_default(&r.config);
  aoi_mpi_config_default(&r.mpi);
  /* AOI_REPLAY_MPI_REBALANCE=N: the strips' rebalance_interval, for the
     tests that move them often */
  const char *every = getenv("AOI_REPLAY_MPI_REBALANCE");
  if (every != NULL && *every != '\0')
    r.mpi.rebalance_interval = (unsigned)strtoul(every, NULL, 10);
  r.config.threads = options->threads;
  r.config.shards = options->shards;
  r.out = out;
  r.err = err;
  /* AOI_REPLAY_KILL=RANK:TICK: that rank dies before that tick;
     AOI_REPLAY_HANG=RANK:TICK: it stops answering then;
     AOI_REPLAY_MPI_TIMEOUT=MS: the ranks' timeout_ms */
  r.kill_tick = fault_tick(getenv("AOI_REPLAY_KILL"), r.rank);
  r.hang_tick = fault_tick(getenv("AOI_REPLAY_HANG"), r.rank);
  const char *timeout = getenv("AOI_REPLAY_MPI_TIMEOUT");
  if (timeout != NULL && *timeout != '\0')
    r.mpi.timeout_ms = (unsigned)strtoul(timeout, NULL, 10);
  /* rank 0 reads the trace; every rank gets it */
  char *all = NULL;
  long long size = 0;
  if (r.rank == 0) {
    size_t cap = 0, n = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, in)) > 0) {
      all = grow(&r, all, &cap, n + got + 1, 1);
      memcpy(all + n, chunk, got);
      n += got;
    }
    size = ferror(in) ? -1 : (long long)n;
  }
  MPI_Bcast(&size, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (size < 0) {
    if (r.rank == 0)
      fprintf(err, "aoi-replay: %s: read error\n", name);
    free(all);
    return 2;
  }
  if (r.rank != 0 && (all = malloc((size_t)size + 1)) == NULL)
    die(&r, "replay", AOI_ENOMEM);
  if (all == NULL && (all = malloc(1)) == NULL)
    die(&r, "replay", AOI_ENOMEM);
  MPI_Bcast(all, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD);
  unsigned long line = 0;
  for (size_t at = 0; at < (size_t)size;) {
    char *nl = memchr(all + at, '\n', (size_t)size - at);
    size_t end = nl != NULL ? (size_t)(nl - all) : (size_t)size;
    char saved = all[end];
    all[end] = '\0';
    apply_line(&r, all + at, end - at, ++line);
    all[end] = saved;
    at = end + 1;
  }
  free(all);
  int status = print_rejected(&r);
  aoi_mpi_destroy(r.world);
  free(r.live);
  free(r.used);
  free(r.events.data);
  free(r.watchers);
  free(r.rejected);
  if (r.rank == 0 && fflush(out) != 0)
    status = 2;
  return status;
}
