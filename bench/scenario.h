/*
 * scenario.h: synthetic crowds. A crowd is a fixed number of entity slots in
 * the square world [0, side] x [0, side]; its scenario turns each tick into
 * a list of operations (adds, moves, removes), all from one PRNG seeded by
 * --seed, and never looks at the engine: the same parameters give the same
 * operations, so the engine under any layout and the baseline are fed alike.
 *
 * The cliff scenarios (outlier, spectator, mixed-radius, flood) are a crowd
 * plus an odd part: one far marker, one camera watcher, a few long-sighted
 * watchers, a flood of operations. With `plain` set the crowd comes without
 * its odd part and is otherwise the same, operation for operation (the odd
 * part draws from a PRNG of its own), so the two can be timed side by side.
 */
#ifndef AOI_BENCH_SCENARIO_H
#define AOI_BENCH_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

typedef struct crowd crowd;

typedef struct crowd_params {
  uint32_t entities; /* slots; each holds one live entity, except in churn */
  double side;       /* the world is [0, side] x [0, side] */
  double step;       /* distance an entity walks in a tick */
  double players;    /* share of entities that are watcher + marker; the
                        rest are NPCs, markers only */
  float radius;      /* everyone's view radius, but the odd part's */
  uint64_t seed;
  int sparse_ids; /* ids spread over 64 bits (crowd_id) instead of 1, 2,
                     3 ... */
  /* The odd part of a cliff scenario, left out when `plain` is set. */
  int plain;
  float outlier_x, outlier_y; /* outlier: where the far marker stands */
  float spectator_radius;     /* spectator: the camera's view radius */
  double mix_share;           /* mixed-radius: the share of the watchers */
  float mix_radius;           /* ... that see this far */
  unsigned flood;             /* flood: moves per entity per tick */
  double walk_share;          /* idle: the share of the crowd that walks a
                                 tick, rounded up to whole entities */
} crowd_params;

/* What a cliff scenario adds to its crowd; BENCH_ODD_NONE for the others. */
typedef enum scenario_odd {
  BENCH_ODD_NONE = 0,
  BENCH_ODD_OUTLIER,   /* one far marker */
  BENCH_ODD_SPECTATOR, /* one watcher of radius max_radius */
  BENCH_ODD_MIXED,     /* a share of long-sighted watchers */
  BENCH_ODD_FLOOD      /* many operations per entity per tick */
} scenario_odd;

typedef struct scenario {
  const char *name;
  const char *summary;
  scenario_odd odd; /* not NONE: aoi-bench times it with and without */
  /* The crowd's view radius is --radius times radius_factor, and each
     entity sees about --neighbours times neighbours_factor others (1 and 1
     but for sparse). */
  double radius_factor, neighbours_factor;
} scenario;

/* The scenarios, in the order `all` runs them. */
extern const scenario bench_scenarios[];
extern const size_t bench_scenario_count;

/* NULL when there is no scenario of that name. */
const scenario *scenario_find(const char *name);

crowd *crowd_create(const scenario *sc, const crowd_params *params);
void crowd_destroy(crowd *c);

/* The operations before the warm-up tick: an add for every entity, ids 1 to
   `entities` (and `entities` + 1 for the odd entity of outlier and
   spectator; with sparse_ids, those numbers spread, crowd_id in
   scenario.c). Borrowed until the next crowd call. */
const bench_op *crowd_start(crowd *c, size_t *count);
/* The operations before the next tick. Borrowed likewise. */
const bench_op *crowd_next(crowd *c, size_t *count);

#endif /* AOI_BENCH_SCENARIO_H */
