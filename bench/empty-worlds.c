/*
 * empty-worlds.c: what idle worlds cost. A server keeps instances open
 * that nobody is in (a dungeon between groups, a house whose owner is
 * offline); they must cost little memory and nearly no tick.
 *
 * usage: aoi-empty-worlds [WORLDS [THREADS [TICKS]]]  (default 10000 2 50)
 *
 * Creates WORLDS empty one-lane worlds on one pool of THREADS threads,
 * counting every byte they allocate through the allocator hooks, then
 * ticks them all with aoi_tick_many TICKS times and prints one JSON line:
 * the bytes an empty world holds after its ticks, the median and the
 * fastest aoi_tick_many, and the process's threads (/proc/self/task).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <aoi.h>

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Atomic size_t held;

static void *count_alloc(void *user, size_t size)
{
  (void)user;
  atomic_fetch_add(&held, size);
  return malloc(size);
}

static void *count_realloc(void *user, void *ptr, size_t old_size,
                           size_t new_size)
{
  (void)user;
  void *p = realloc(ptr, new_size);
  if (p != NULL) {
    atomic_fetch_add(&held, new_size);
    atomic_fetch_sub(&held, old_size);
  }
  return p;
}

static void count_free(void *user, void *ptr, size_t size)
{
  (void)user;
  if (ptr != NULL)
    atomic_fetch_sub(&held, size);
  free(ptr);
}

static double now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int compare_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The entries of /proc/self/task, or -1 without it. */
static int os_threads(void)
{
  DIR *d = opendir("/proc/self/task");
  if (d == NULL)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static unsigned arg(int argc, char **argv, int i, unsigned fallback)
{
  if (argc <= i)
    return fallback;
  char *end;
  unsigned long v = strtoul(argv[i], &end, 10);
  if (*end != '\0' || v < 1 || v > 10000000) {
    fprintf(stderr, "usage: aoi-empty-worlds [WORLDS [THREADS [TICKS]]]\n");
    exit(2);
  }
  return (unsigned)v;
}

static void check(int rc, const char *what)
{
  if (rc != 0) {
    fprintf(stderr, "aoi-empty-worlds: %s: %s\n", what, aoi_strerror(rc));
    exit(1);
  }
}

int main(int argc, char **argv)
{
  unsigned count = arg(argc, argv, 1, 10000);
  unsigned threads = arg(argc, argv, 2, 2);
  unsigned ticks = arg(argc, argv, 3, 50);
  aoi_pool_config pc;
  aoi_pool_config_default(&pc);
  pc.threads = threads;
  aoi_pool *pool;
  check(aoi_pool_create(&pc, &pool), "aoi_pool_create");

  aoi_allocator counting = {count_alloc, count_realloc, count_free, NULL};
  aoi_world **worlds = calloc(count, sizeof(*worlds));
  int *results = calloc(count, sizeof(int));
  double *ms = calloc(ticks, sizeof(double));
  if (worlds == NULL || results == NULL || ms == NULL)
    check(AOI_ENOMEM, "calloc");
  for (unsigned i = 0; i < count; i++) {
    aoi_config c;
    aoi_config_default(&c);
    c.run = AOI_RUN_POOL;
    c.pool = pool;
    c.allocator = &counting;
    check(aoi_create(&c, &worlds[i]), "aoi_create");
  }
  check(aoi_tick_many(worlds, count, results), "aoi_tick_many"); /* warm */
  for (unsigned t = 0; t < ticks; t++) {
    double t0 = now_ms();
    check(aoi_tick_many(worlds, count, results), "aoi_tick_many");
    ms[t] = now_ms() - t0;
  }
  int tasks = os_threads();
  size_t bytes = atomic_load(&held);
  qsort(ms, ticks, sizeof(double), compare_double);
  printf("{\"worlds\":%u,\"threads\":%u,\"ticks\":%u,"
         "\"bytes_per_world\":%.1f,\"tick_many_ms_median\":%.4f,"
         "\"tick_many_ms_min\":%.4f,\"ns_per_world\":%.1f,"
         "\"os_threads\":%d}\n",
         count, threads, ticks, (double)bytes / count, ms[ticks / 2], ms[0],
         ms[ticks / 2] * 1e6 / count, tasks);
  for (unsigned i = 0; i < count; i++)
    check(aoi_destroy(worlds[i]), "aoi_destroy");
  check(aoi_pool_destroy(pool), "aoi_pool_destroy");
  if (atomic_load(&held) != 0) {
    fprintf(stderr, "aoi-empty-worlds: %zu bytes left after destroy\n",
            atomic_load(&held));
    return 1;
  }
  free(worlds);
  free(results);
  free(ms);
  return 0;
}
