/*
 * tick-cost.c: what a quiet tick and a flood cost (public API only).
 *
 *   aoi-tick-cost ticks [--threads T] [--entities N] [--ops M] [--ticks K]
 *     K ticks of a world of N walkers, M of them moving each tick: wall
 *     and process CPU (every thread) per tick, then the CPU the process
 *     uses while it sleeps between ticks at 60 Hz.
 *   aoi-tick-cost flood [--threads T]
 *     10^7 zig-zag moves across shards and 10^5 remove + add pairs of one
 *     id: VmSize and live heap (the allocator hook) before, after the ops,
 *     after the tick, after 100 idle ticks.
 *   aoi-tick-cost wedge [--threads T]
 *     a 100 MB allocator budget, 10^6 moves of one entity, then ticks.
 *   aoi-tick-cost spot [--threads T] [--entities N]
 *     N entities (default 4000) added within a 10 x 10 square, radius 10,
 *     no cap: the first tick, where everyone enters everyone's view (N^2
 *     events), its time per event, and the delivery of them all.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "aoi.h"

static atomic_llong live_bytes, budget;

static void *hook_alloc(void *user, size_t size)
{
  (void)user;
  if (atomic_load(&budget) > 0 &&
      atomic_load(&live_bytes) + (long long)size > atomic_load(&budget))
    return NULL;
  void *p = malloc(size);
  if (p != NULL)
    atomic_fetch_add(&live_bytes, (long long)size);
  return p;
}

static void *hook_realloc(void *user, void *ptr, size_t old, size_t size)
{
  (void)user;
  long long grow = (long long)size - (long long)old;
  if (atomic_load(&budget) > 0 &&
      atomic_load(&live_bytes) + grow > atomic_load(&budget))
    return NULL;
  void *p = realloc(ptr, size);
  if (p != NULL)
    atomic_fetch_add(&live_bytes, grow);
  return p;
}

static void hook_free(void *user, void *ptr, size_t size)
{
  (void)user;
  if (ptr != NULL)
    atomic_fetch_sub(&live_bytes, (long long)size);
  free(ptr);
}

static double now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double cpu_us(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

/* This thread's CPU: the process's less this is the workers'. */
static double thread_cpu_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double vm_mb(const char *field)
{
  char line[256];
  double kb = 0;
  FILE *f = fopen("/proc/self/status", "r");
  if (f == NULL)
    return 0;
  while (fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, field, strlen(field)) == 0)
      kb = atof(line + strlen(field) + 1);
  fclose(f);
  return kb / 1024;
}

static void check(int rc, const char *what)
{
  if (rc != 0) {
    fprintf(stderr, "aoi-tick-cost: %s: %s\n", what, aoi_strerror(rc));
    exit(1);
  }
}

/* Adds a watcher and marker on every layer. */
static int add_walker(aoi_world *w, uint64_t id, float x, float y,
                      float radius)
{
  return aoi_add(w, &(aoi_entity){.id = id,
                                  .x = x,
                                  .y = y,
                                  .radius = radius,
                                  .flags = AOI_WATCHER | AOI_MARKER,
                                  .layers = AOI_ALL_LAYERS,
                                  .interest = AOI_ALL_LAYERS});
}

static void drain(aoi_world *w)
{
  const uint64_t *ids;
  size_t n;
  check(aoi_pending(w, &ids, &n), "aoi_pending");
  for (size_t i = 0; i < n; i++) {
    const aoi_event *ev;
    size_t count;
    check(aoi_drain(w, ids[i], &ev, &count), "aoi_drain");
  }
}

static aoi_world *make_world(unsigned threads, unsigned entities)
{
  static const aoi_allocator hooks = {hook_alloc, hook_realloc, hook_free,
                                      NULL};
  aoi_config config;
  aoi_config_default(&config);
  config.threads = threads;
  config.max_radius = 50;
  config.allocator = &hooks;
  aoi_world *w;
  check(aoi_create(&config, &w), "aoi_create");
  for (unsigned i = 0; i < entities; i++)
    check(add_walker(w, i + 1, (float)(i * 37 % 1000),
                     (float)(i * 91 % 1000), 20),
          "aoi_add");
  check(aoi_tick(w), "aoi_tick");
  drain(w);
  return w;
}

static void report_memory(const char *when)
{
  printf("  %-26s VmSize %8.1f MB  VmRSS %8.1f MB  heap %8.2f MB\n", when,
         vm_mb("VmSize:"), vm_mb("VmRSS:"),
         (double)atomic_load(&live_bytes) / (1024 * 1024));
}

static void run_ticks(unsigned threads, unsigned entities, unsigned ops,
                      unsigned ticks)
{
  aoi_world *w = make_world(threads, entities);
  for (unsigned t = 0; t < 100; t++) /* settle */
    check(aoi_tick(w), "aoi_tick");
  double wall = 0, cpu0 = cpu_us(), step = 0;
  for (unsigned t = 0; t < ticks; t++) {
    for (unsigned i = 0; i < ops && entities > 0; i++) {
      uint64_t id = 1 + (t * ops + i) % entities;
      step = step > 0 ? -1 : 1;
      check(aoi_move(w, id, (float)((id * 37) % 1000 + step),
                     (float)((id * 91) % 1000)),
            "aoi_move");
    }
    double t0 = now_us();
    check(aoi_tick(w), "aoi_tick");
    wall += now_us() - t0;
    drain(w);
  }
  double cpu = cpu_us() - cpu0;
  printf("threads %u entities %u ops/tick %u: %.2f us wall, %.2f us CPU "
         "per tick (%u ticks)\n",
         threads, entities, ops, wall / ticks, cpu / ticks, ticks);
  /* The same ticks, 60 a second for 2 s: what the workers take, in the
     ticks and between them. */
  double c0 = cpu_us(), h0 = thread_cpu_us(), w0 = now_us();
  for (unsigned t = 0; t < 120; t++) {
    for (unsigned i = 0; i < ops && entities > 0; i++) {
      uint64_t id = 1 + (t * ops + i) % entities;
      step = step > 0 ? -1 : 1;
      check(aoi_move(w, id, (float)((id * 37) % 1000 + step),
                     (float)((id * 91) % 1000)),
            "aoi_move");
    }
    check(aoi_tick(w), "aoi_tick");
    drain(w);
    struct timespec frame = {0, 16666667};
    nanosleep(&frame, NULL);
  }
  double all = cpu_us() - c0, host = thread_cpu_us() - h0;
  double elapsed = now_us() - w0;
  printf("  at 60 Hz for %.1f s: workers %.3f%% CPU, host %.3f%%\n",
         elapsed / 1e6, all > host ? 100 * (all - host) / elapsed : 0.0,
         100 * host / elapsed);
  aoi_destroy(w);
}

static void run_flood(unsigned threads)
{
  aoi_world *w = make_world(threads, 1000);
  for (unsigned t = 0; t < 20; t++)
    check(aoi_tick(w), "aoi_tick");
  report_memory("before (settled)");
  /* Entity i hops over the x = 500 cut and back, 10^4 hops each, ending
     where it started; entity 7 is removed and added again 10^5 times. */
  for (unsigned k = 0; k < 10000000; k++) {
    unsigned i = k % 1000;
    float x = (float)(i * 37 % 1000), y = (float)(i * 91 % 1000);
    check(aoi_move(w, i + 1, (k / 1000) % 2 ? x : 1000 - x, y), "aoi_move");
  }
  for (unsigned k = 0; k < 100000; k++) {
    check(aoi_remove(w, 7), "aoi_remove");
    check(add_walker(w, 7, 6 * 37 % 1000, 6 * 91 % 1000, 20), "aoi_add");
  }
  report_memory("after 1e7 moves, 1e5 pairs");
  check(aoi_tick(w), "aoi_tick");
  drain(w);
  report_memory("after the tick");
  for (unsigned t = 0; t < 100; t++)
    check(aoi_tick(w), "aoi_tick");
  drain(w);
  report_memory("after 100 idle ticks");
  aoi_destroy(w);
}

static void run_wedge(unsigned threads)
{
  atomic_store(&budget, 100ll << 20);
  aoi_world *w = make_world(threads, 1000);
  unsigned accepted = 0;
  for (unsigned k = 0; k < 1000000; k++)
    accepted += aoi_move(w, 1, (k % 2) ? 250.0f : 750.0f, 500) == 0;
  printf("  budget 100 MB: %u of 10^6 moves accepted, heap %.1f MB\n",
         accepted, (double)atomic_load(&live_bytes) / (1024 * 1024));
  for (int t = 0; t < 5; t++) {
    int rc = aoi_tick(w);
    aoi_stats st;
    check(aoi_world_stats(w, &st), "aoi_stats_get");
    printf("  aoi_tick: %s, stats.tick %llu, heap %.1f MB\n",
           rc ? aoi_strerror(rc) : "0", (unsigned long long)st.tick,
           (double)atomic_load(&live_bytes) / (1024 * 1024));
  }
  aoi_destroy(w);
}

static void count_events(void *user, uint64_t watcher, uint64_t tag,
                         const aoi_event *ev, size_t count)
{
  (void)tag;
  (void)watcher;
  (void)ev;
  *(uint64_t *)user += count;
}

static void run_spot(unsigned threads, unsigned entities)
{
  aoi_config config;
  aoi_config_default(&config);
  config.threads = threads;
  aoi_world *w;
  check(aoi_create(&config, &w), "aoi_create");
  uint64_t state = 1;
  for (unsigned i = 0; i < entities; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    float x = 500 + (float)(state >> 40 & 0xffff) / 6553.6f;
    float y = 500 + (float)(state >> 20 & 0xffff) / 6553.6f;
    check(add_walker(w, i + 1, x, y, 10), "aoi_add");
  }
  double t0 = now_us();
  check(aoi_tick(w), "aoi_tick");
  double t1 = now_us();
  uint64_t delivered = 0;
  for (unsigned s = 0; s < aoi_delivery_segments(w); s++)
    check(aoi_deliver(w, s, count_events, &delivered), "aoi_deliver");
  double t2 = now_us();
  aoi_stats stats;
  check(aoi_world_stats(w, &stats), "aoi_stats_get");
  printf("threads %u entities %u on one spot: first tick %.1f ms, %" PRIu64
         " events (%.1f ns an event), delivered %" PRIu64 " in %.1f ms\n",
         threads, entities, (t1 - t0) / 1e3, stats.events,
         (t1 - t0) * 1e3 / (double)(stats.events ? stats.events : 1),
         delivered, (t2 - t1) / 1e3);
  aoi_destroy(w);
}

int main(int argc, char **argv)
{
  unsigned threads = 2, entities = 0, ops = 0, ticks = 100000;
  const char *mode = argc > 1 ? argv[1] : "ticks";
  for (int i = 2; i + 1 < argc; i += 2) {
    unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 10);
    if (strcmp(argv[i], "--threads") == 0)
      threads = v;
    else if (strcmp(argv[i], "--entities") == 0)
      entities = v;
    else if (strcmp(argv[i], "--ops") == 0)
      ops = v;
    else if (strcmp(argv[i], "--ticks") == 0)
      ticks = v;
    else
      return fprintf(stderr, "aoi-tick-cost: unknown flag %s\n", argv[i]), 2;
  }
  if (strcmp(mode, "ticks") == 0)
    run_ticks(threads, entities, ops, ticks ? ticks : 1);
  else if (strcmp(mode, "flood") == 0)
    run_flood(threads);
  else if (strcmp(mode, "wedge") == 0)
    run_wedge(threads);
  else if (strcmp(mode, "spot") == 0)
    run_spot(threads, entities ? entities : 4000);
  else
    return fprintf(stderr,
                   "usage: aoi-tick-cost ticks|flood|wedge|spot [flags]\n"),
           2;
  return 0;
}
