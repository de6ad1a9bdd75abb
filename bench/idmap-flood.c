/*
 * idmap-flood.c: what ids built to collide in the host's id map cost the
 * host thread, through the public API only. Times N aoi_add, then ROUNDS
 * rounds of N aoi_move (the ticks between rounds are not timed), once with
 * random ids and once with ids that all collide under the id map's former
 * unkeyed hash (the splitmix64 finaliser, inverted: every id's hash has its
 * low 20 bits zero, so they share one home slot in any table of up to 2^20
 * slots). Prints ns per call and the flooded / random ratio. Measures, never
 * fails on a ratio.
 *
 *   aoi-idmap-flood [ids [rounds [repeats]]]     (default 20000 20 5)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <aoi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "old_hash.h"

static uint64_t now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

typedef struct result {
  double add_ns, move_ns; /* per call */
} result;

static void check(int rc, const char *what)
{
  if (rc != 0) {
    fprintf(stderr, "idmap-flood: %s: %s\n", what, aoi_strerror(rc));
    exit(1);
  }
}

static result run(const uint64_t *ids, unsigned n, unsigned rounds)
{
  aoi_config config;
  aoi_config_default(&config);
  config.threads = 1;
  config.move_events = 0;
  aoi_world *w;
  check(aoi_create(&config, &w), "aoi_create");
  float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
  if (x == NULL || y == NULL)
    check(AOI_ENOMEM, "malloc");
  for (unsigned i = 0; i < n; i++) {
    x[i] = (float)(i % 1000);
    y[i] = (float)(i / 1000 % 1000);
  }
  uint64_t t0 = now_ns();
  for (unsigned i = 0; i < n; i++)
    check(aoi_add(w, &(aoi_entity){.id = ids[i],
                                   .x = x[i],
                                   .y = y[i],
                                   .flags = AOI_MARKER,
                                   .layers = 1}),
          "aoi_add");
  result r = {(double)(now_ns() - t0) / n, 0};
  check(aoi_tick(w), "aoi_tick");
  uint64_t moving = 0;
  for (unsigned round = 0; round < rounds; round++) {
    float step = (round & 1) ? -0.5f : 0.5f;
    t0 = now_ns();
    for (unsigned i = 0; i < n; i++)
      check(aoi_move(w, ids[i], x[i] + step, y[i]), "aoi_move");
    moving += now_ns() - t0;
    check(aoi_tick(w), "aoi_tick");
  }
  r.move_ns = (double)moving / ((double)n * rounds);
  aoi_destroy(w);
  free(x);
  free(y);
  return r;
}

static void keep_best(result *b, result r, unsigned repeat)
{
  if (repeat == 0 || r.add_ns < b->add_ns)
    b->add_ns = r.add_ns;
  if (repeat == 0 || r.move_ns < b->move_ns)
    b->move_ns = r.move_ns;
}

int main(int argc, char **argv)
{
  unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 20000;
  unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 20;
  unsigned repeats = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 5;
  if (n == 0 || n > (1u << 20) || rounds == 0 || repeats == 0) {
    fprintf(stderr, "usage: aoi-idmap-flood [ids <= 2^20 [rounds [repeats]]]\n");
    return 2;
  }
  uint64_t *random_ids = malloc(sizeof(uint64_t) * n);
  uint64_t *flood_ids = malloc(sizeof(uint64_t) * n);
  if (random_ids == NULL || flood_ids == NULL)
    check(AOI_ENOMEM, "malloc");
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (unsigned i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    random_ids[i] = s;
    flood_ids[i] = old_preimage((uint64_t)(i + 1) << 20);
  }
  /* interleaved, so that a noisy neighbour hurts both alike */
  result r = {0, 0}, f = {0, 0};
  for (unsigned i = 0; i < repeats; i++) {
    keep_best(&r, run(random_ids, n, rounds), i);
    keep_best(&f, run(flood_ids, n, rounds), i);
  }
  printf("ids %u, rounds %u, best of %u\n", n, rounds, repeats);
  printf("           %10s %10s\n", "add ns", "move ns");
  printf("random     %10.1f %10.1f\n", r.add_ns, r.move_ns);
  printf("flooded    %10.1f %10.1f\n", f.add_ns, f.move_ns);
  printf("ratio      %10.2f %10.2f\n", f.add_ns / r.add_ns,
         f.move_ns / r.move_ns);
  free(random_ids);
  free(flood_ids);
  return 0;
}
