/*
 * scenario.h: synthetic crowds. A crowd is a fixed number of entity slots in
 * the square world [0, side] x [0, side]; its scenario turns each tick into
 * a list of operations (adds, moves, removes), all from one PRNG seeded by
 * --seed, and never looks at the engine: the same parameters give the same
 * operations, so the engine under any layout and the baseline are fed alike.
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
  uint64_t seed;
} crowd_params;

typedef struct scenario {
  const char *name;
  const char *summary;
} scenario;

/* The scenarios, in the order `all` runs them. */
extern const scenario bench_scenarios[];
extern const size_t bench_scenario_count;

/* NULL when there is no scenario of that name. */
const scenario *scenario_find(const char *name);

crowd *crowd_create(const scenario *sc, const crowd_params *params);
void crowd_destroy(crowd *c);

/* The operations before the warm-up tick: an add for every entity, ids 1 to
   `entities`. Borrowed until the next crowd call. */
const bench_op *crowd_start(crowd *c, size_t *count);
/* The operations before the next tick. Borrowed likewise. */
const bench_op *crowd_next(crowd *c, size_t *count);

#endif /* AOI_BENCH_SCENARIO_H */
