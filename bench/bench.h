/*
 * bench.h: what the files of aoi-bench share: exiting on errors, checked
 * allocation, the clock, the deterministic PRNG, the operations a scenario
 * submits, and the event checksum.
 *
 * Everything here runs on the bench's one thread; only the allocator hook
 * in aoi-bench.c is also called from the engine's workers.
 */
#ifndef AOI_BENCH_H
#define AOI_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aoi.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* Exit statuses: a run that failed or found a difference, and a command
   line that could not be understood. */
#define BENCH_EXIT_FAIL 1
#define BENCH_EXIT_USAGE 2

/* Prints "aoi-bench: MESSAGE" on stderr and exits with BENCH_EXIT_FAIL. */
void bench_die(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

/* calloc and realloc that exit on failure; zero sizes are fine. */
void *bench_calloc(size_t count, size_t size);
void *bench_realloc(void *p, size_t count, size_t size);

/* Monotonic clock, in nanoseconds. */
uint64_t bench_now_ns(void);

/* A progress line on stderr ("\r[uniform t=2] tick 17/50"), only when
   stderr is a terminal and at most ten times a second; and its erasure,
   which must come before any other output on stderr. */
void bench_progress(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void bench_progress_clear(void);

/* ---- deterministic random numbers (splitmix64) -------------------------- */

typedef struct bench_rng {
  uint64_t state;
} bench_rng;

static inline uint64_t rng_next(bench_rng *rng)
{
  uint64_t z = (rng->state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static inline double rng_unit(bench_rng *rng)
{
  return (double)(rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [0, n), n > 0 (the tiny modulo bias does not matter here). */
static inline uint32_t rng_below(bench_rng *rng, uint32_t n)
{
  return (uint32_t)(rng_next(rng) % n);
}

/* ---- operations --------------------------------------------------------- */

typedef enum bench_op_kind {
  BENCH_OP_ADD = 0,
  BENCH_OP_MOVE = 1,
  BENCH_OP_REMOVE = 2
} bench_op_kind;

/* One call a scenario makes before a tick. Adds use every layer and every
   interest. */
typedef struct bench_op {
  uint64_t id;
  uint32_t slot;       /* the crowd's slot of the entity, 0 .. entities - 1,
                          or `entities` for a cliff's odd entity: the index
                          a host would keep its own record of it under */
  float x, y;          /* add, move */
  float radius;        /* add: the view radius */
  uint8_t kind;        /* a bench_op_kind */
  uint8_t flags;       /* add: AOI_WATCHER and/or AOI_MARKER */
} bench_op;

/* ---- checksum ----------------------------------------------------------- */

#define BENCH_CHECKSUM_SEED UINT64_C(0xcbf29ce484222325)

static inline uint64_t hash_mix(uint64_t h, uint64_t v)
{
  h ^= v;
  h *= UINT64_C(0x100000001b3);
  return h ^ (h >> 29);
}

static inline uint64_t float_bits(float f)
{
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  return bits;
}

/* One watcher's events of one tick, hashed. A run's checksum starts at
   BENCH_CHECKSUM_SEED and adds this hash (wrapping) for every watcher
   delivered on every tick, the warm-up's included: the sum does not
   depend on the order of the watchers, so the engine, the baselines and
   the bindings' replays (docs/bindings.md) agree on equal events. */
static inline uint64_t hash_outbox(uint64_t h, uint64_t watcher,
                                   const aoi_event *events, size_t count)
{
  h = hash_mix(h, watcher);
  h = hash_mix(h, count);
  for (size_t j = 0; j < count; j++) {
    const aoi_event *e = &events[j];
    h = hash_mix(h, e->id);
    h = hash_mix(h, ((uint64_t)e->kind << 32) | e->tick);
    h = hash_mix(h, (float_bits(e->x) << 32) | float_bits(e->y));
  }
  return h;
}

#endif /* AOI_BENCH_H */
