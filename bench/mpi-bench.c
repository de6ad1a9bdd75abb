/*
 * aoi-bench --mpi: the walking crowd of aoi-bench on one world spread over
 * the ranks of MPI_COMM_WORLD (aoi_mpi.h), run under mpirun; or, with
 * --plain at one rank, on one plain world, the same crowd and the same
 * timing, to compare against: its segments delivered at once on as many
 * threads, as aoi-bench delivers them. Run it under mpirun with
 * --bind-to none, else the runtime binds a process of one rank to one
 * core, whatever its threads.
 *
 * usage: mpirun -np P aoi-bench --mpi [--scenario NAME] [--entities N]
 *                      [--ticks T] [--warmup W] [--threads T]
 *                      [--rebalance N] [--seed S] [--plain]
 *
 * --rebalance is aoi_mpi_config.rebalance_interval (default 16).
 *
 * Every rank steps the whole crowd (the game's logic, not timed) and
 * submits the operations of the entities it owns, and the adds in its
 * strip: it keeps which it owns as a host does, from its adds and from
 * aoi_mpi_transfers (timed with the tick). A frame is the submit, the tick and the delivery (each event
 * hashed into the checksum); the job's frame is the slowest rank's, and
 * the medians are over the measured ticks. Rank 0 prints one JSON object:
 * the medians of frame, submit, tick, deliver and the time the tick
 * waited on peers (the slowest rank's), the wire's messages, records and
 * bytes a tick (every rank's together) and bytes a record, the entities
 * and ghosts held, the transfers a tick, the times the strips moved, and
 * the checksum, which is aoi-bench's for the same
 * crowd, seed, ticks and warm-up (bench.h, hash_outbox), at every rank
 * count.
 */
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aoi_mpi.h"
#include "bench.h"
#include "mpi-bench.h"
#include "scenario.h"

typedef struct options {
  const char *scenario;
  uint32_t entities, ticks, warmup, threads, rebalance;
  uint64_t seed;
  int plain;
} options;

typedef struct run {
  aoi_mpi_world *mpi;
  aoi_world *plain;
  int rank;
  uint64_t checksum;
  /* the crowd's slots this rank owns, as a host keeps them: set by its
     adds, changed by the transfers (the tag is the slot) */
  unsigned char *mine;
} run;

static void transferred(void *user, uint64_t id, uint64_t tag, int rank,
                        int in)
{
  run *r = user;
  (void)id;
  (void)rank;
  r->mine[tag] = (unsigned char)in;
}

static void take(void *user, uint64_t watcher, uint64_t tag,
                 const aoi_event *events, size_t count)
{
  uint64_t *sum = user;
  (void)tag;
  *sum += hash_outbox(BENCH_CHECKSUM_SEED, watcher, events, count);
}

/* One segment of the plain world, delivered on a thread of its own. */
typedef struct segment_job {
  aoi_world *world;
  unsigned segment;
  uint64_t sum;
  int rc;
} segment_job;

static void *deliver_segment(void *arg)
{
  segment_job *j = arg;
  j->rc = aoi_deliver(j->world, j->segment, take, &j->sum);
  return NULL;
}

/* The plain world's delivery as aoi-bench's: every segment at once, one
   on this thread and each other on a thread of its own. */
static int deliver_plain(run *r)
{
  unsigned n = aoi_delivery_segments(r->plain);
  segment_job *jobs = bench_calloc(n, sizeof(*jobs));
  pthread_t *threads = bench_calloc(n, sizeof(*threads));
  for (unsigned s = 0; s < n; s++)
    jobs[s] = (segment_job){r->plain, s, 0, 0};
  for (unsigned s = 1; s < n; s++)
    if (pthread_create(&threads[s], NULL, deliver_segment, &jobs[s]) != 0)
      bench_die("--mpi: pthread_create");
  deliver_segment(&jobs[0]);
  int rc = 0;
  for (unsigned s = 0; s < n; s++) {
    if (s > 0)
      pthread_join(threads[s], NULL);
    r->checksum += jobs[s].sum;
    if (rc == 0)
      rc = jobs[s].rc;
  }
  free(jobs);
  free(threads);
  return rc;
}

static unsigned long number(const char *flag, const char *text)
{
  char *end;
  unsigned long v = strtoul(text, &end, 10);
  if (*text == '\0' || *end != '\0')
    bench_die("--mpi: %s: '%s' is not a number", flag, text);
  return v;
}

static void parse(int argc, char **argv, options *o)
{
  *o = (options){"uniform", 100000, 20, 1, 1, 16, 1, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--plain") == 0) {
      o->plain = 1;
      continue;
    }
    if (i + 1 >= argc)
      bench_die("--mpi: %s needs a value (see the top of "
                "bench/mpi-bench.c)", a);
    const char *v = argv[++i];
    if (strcmp(a, "--scenario") == 0)
      o->scenario = v;
    else if (strcmp(a, "--entities") == 0)
      o->entities = (uint32_t)number(a, v);
    else if (strcmp(a, "--ticks") == 0)
      o->ticks = (uint32_t)number(a, v);
    else if (strcmp(a, "--warmup") == 0)
      o->warmup = (uint32_t)number(a, v);
    else if (strcmp(a, "--threads") == 0)
      o->threads = (uint32_t)number(a, v);
    else if (strcmp(a, "--rebalance") == 0)
      o->rebalance = (uint32_t)number(a, v);
    else if (strcmp(a, "--seed") == 0)
      o->seed = number(a, v);
    else
      bench_die("--mpi: unknown option %s", a);
  }
  if (o->entities == 0 || o->ticks == 0 || o->warmup == 0)
    bench_die("--mpi: --entities, --ticks and --warmup must be > 0");
}

/* Submits op to whichever world this rank runs, if it is this rank's. */
static int submit(run *r, const bench_op *op)
{
  if (r->plain != NULL) {
    switch (op->kind) {
    case BENCH_OP_ADD:
      return aoi_add(r->plain,
                     &(aoi_entity){.id = op->id, .tag = op->slot, .x = op->x,
                                   .y = op->y, .radius = op->radius,
                                   .flags = op->flags, .layers = ~0u,
                                   .interest = ~0u});
    case BENCH_OP_MOVE:
      return aoi_move(r->plain, op->id, op->x, op->y);
    default:
      return aoi_remove(r->plain, op->id);
    }
  }
  if (op->kind == BENCH_OP_ADD) {
    if (aoi_mpi_rank_of(r->mpi, op->x, op->y) != r->rank)
      return 0;
    r->mine[op->slot] = 1;
    return aoi_mpi_add(r->mpi,
                       &(aoi_entity){.id = op->id, .tag = op->slot, .x = op->x,
                                     .y = op->y, .radius = op->radius,
                                     .flags = op->flags, .layers = ~0u,
                                     .interest = ~0u});
  }
  if (!r->mine[op->slot])
    return 0; /* another rank's */
  if (op->kind == BENCH_OP_REMOVE)
    r->mine[op->slot] = 0;
  return op->kind == BENCH_OP_MOVE ? aoi_mpi_move(r->mpi, op->id, op->x, op->y)
                                   : aoi_mpi_remove(r->mpi, op->id);
}

static int by_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, uint32_t n)
{
  qsort(v, n, sizeof(double), by_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { FRAME, SUBMIT, TICK, DELIVER, WAIT, TIMES };
enum { MESSAGES, RECORDS, BYTES, OWNED, GHOSTS, TRANSFERS, COUNTS };

int mpi_bench_main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  options o;
  parse(argc, argv, &o);
  if (o.plain && ranks != 1)
    bench_die("--mpi: --plain runs on one rank");
  const scenario *sc = scenario_find(o.scenario);
  if (sc == NULL)
    bench_die("--mpi: no scenario %s", o.scenario);

  /* aoi-bench's crowd: radius 10, about 35 in view, a step of R / 20 */
  double radius = 10 * sc->radius_factor;
  double neighbours = 35 * sc->neighbours_factor;
  crowd_params p = {0};
  p.entities = o.entities;
  p.side = sqrt(o.entities * M_PI * radius * radius / neighbours);
  p.step = radius / 20;
  p.players = 1;
  p.radius = (float)radius;
  p.seed = o.seed;
  p.walk_share = 0.05;
  crowd *c = crowd_create(sc, &p);

  aoi_config config;
  aoi_config_default(&config);
  config.threads = o.threads;
  config.min_x = config.min_y = 0;
  config.max_x = config.max_y = (float)p.side;
  config.max_radius = (float)radius;
  aoi_mpi_config mpi;
  aoi_mpi_config_default(&mpi);
  mpi.rebalance_interval = o.rebalance;
  run r = {NULL, NULL, rank, 0, bench_calloc(o.entities + 1, 1)};
  int rc = o.plain ? aoi_create(&config, &r.plain)
                   : aoi_mpi_create(&config, &mpi, MPI_COMM_WORLD, &r.mpi);
  if (rc != 0)
    bench_die("--mpi: create: %s", aoi_strerror(rc));

  uint32_t total = o.warmup + o.ticks;
  double *times = bench_calloc((size_t)TIMES * o.ticks, sizeof(double));
  double *counts = bench_calloc((size_t)COUNTS * o.ticks, sizeof(double));
  for (uint32_t t = 0; t < total; t++) {
    size_t n;
    const bench_op *ops = t == 0 ? crowd_start(c, &n) : crowd_next(c, &n);
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < n; i++)
      if ((rc = submit(&r, &ops[i])) != 0)
        bench_die("--mpi: operation: %s", aoi_strerror(rc));
    uint64_t t1 = bench_now_ns();
    rc = o.plain ? aoi_tick(r.plain) : aoi_mpi_tick(r.mpi);
    if (rc == 0 && !o.plain)
      rc = aoi_mpi_transfers(r.mpi, transferred, &r);
    if (rc != 0)
      bench_die("--mpi: tick: %s", aoi_strerror(rc));
    uint64_t t2 = bench_now_ns();
    rc = o.plain ? deliver_plain(&r) : aoi_mpi_deliver(r.mpi, take, &r.checksum);
    if (rc != 0)
      bench_die("--mpi: deliver: %s", aoi_strerror(rc));
    uint64_t t3 = bench_now_ns();
    aoi_mpi_stats st = {0};
    if (!o.plain)
      aoi_mpi_stats_get(r.mpi, &st);
    if (t < o.warmup)
      continue;
    uint32_t m = t - o.warmup;
    double mine[TIMES] = {(t3 - t0) / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
                          (t3 - t2) / 1e6, st.wait_ns / 1e6};
    double sums[COUNTS] = {(double)st.messages, (double)st.records,
                           (double)st.bytes, (double)st.owned,
                           (double)st.ghosts,
                           (double)(st.transfers_out)};
    double slowest[TIMES], all[COUNTS];
    MPI_Reduce(mine, slowest, TIMES, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(sums, all, COUNTS, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int k = 0; k < TIMES; k++)
      times[(size_t)k * o.ticks + m] = slowest[k];
    for (int k = 0; k < COUNTS; k++)
      counts[(size_t)k * o.ticks + m] = all[k];
  }
  aoi_mpi_stats last = {0};
  if (!o.plain)
    aoi_mpi_stats_get(r.mpi, &last);
  uint64_t rebalances = last.rebalances;
  unsigned long long sum = r.checksum, checksum = 0;
  MPI_Reduce(&sum, &checksum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
             MPI_COMM_WORLD);
  if (rank == 0) {
    double med[TIMES], avg[COUNTS] = {0};
    for (int k = 0; k < TIMES; k++)
      med[k] = median(times + (size_t)k * o.ticks, o.ticks);
    for (int k = 0; k < COUNTS; k++)
      for (uint32_t m = 0; m < o.ticks; m++)
        avg[k] += counts[(size_t)k * o.ticks + m] / o.ticks;
    printf("{\"scenario\":\"%s\",\"entities\":%" PRIu32 ",\"ranks\":%d,"
           "\"threads\":%" PRIu32 ",\"plain\":%s,\"ticks\":%" PRIu32 ","
           "\"frame_ms_median\":%.3f,\"submit_ms_median\":%.3f,"
           "\"tick_ms_median\":%.3f,\"deliver_ms_median\":%.3f,"
           "\"wait_ms_median\":%.3f,\"wire_messages_per_tick\":%.1f,"
           "\"wire_records_per_tick\":%.1f,\"wire_bytes_per_tick\":%.0f,"
           "\"wire_bytes_per_record\":%.2f,\"owned\":%.0f,\"ghosts\":%.0f,"
           "\"transfers_per_tick\":%.1f,\"rebalances\":%" PRIu64 ","
           "\"checksum\":\"%016" PRIx64 "\"}\n",
           o.scenario, o.entities, ranks, o.threads,
           o.plain ? "true" : "false", o.ticks, med[FRAME], med[SUBMIT],
           med[TICK], med[DELIVER], med[WAIT], avg[MESSAGES], avg[RECORDS],
           avg[BYTES], avg[RECORDS] > 0 ? avg[BYTES] / avg[RECORDS] : 0,
           avg[OWNED], avg[GHOSTS], avg[TRANSFERS], rebalances,
           (uint64_t)(BENCH_CHECKSUM_SEED + (uint64_t)checksum));
  }
  free(r.mine);
  free(times);
  free(counts);
  aoi_mpi_destroy(r.mpi);
  aoi_destroy(r.plain);
  crowd_destroy(c);
  MPI_Finalize();
  return 0;
}
