/*
 * support.h: what several tests share, free of cmocka so that the fuzz
 * targets link it too (library aoi_test_support):
 *
 * - test_tag and test_add: the tag every test gives its entities.
 * - Allocator hooks over malloc, for the tests of internal modules.
 * - A counting, failing allocator, for aoi_config's allocator hooks: it
 *   counts live bytes and blocks (and their peak), checks that every free
 *   and realloc names the block's true size, and fails the allocations it
 *   is armed for, and those that would take the live bytes above its
 *   budget when it has one. The hooks are called from every thread, so all
 *   its state is atomic; only the test's main thread reads it.
 * - Records: events as the host drained them, compared and named.
 * - splitmix64, the random numbers of the tests: the same stream on every
 *   compiler, so that a seed names the same run everywhere.
 * - A trace (docs/trace-format.md) written line by line, as test_differential
 *   and fuzz_api keep the operations so far, to replay a failure.
 */
#ifndef AOI_TESTS_SUPPORT_H
#define AOI_TESTS_SUPPORT_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aoi.h"

/* The tag the tests give entity `id`: not the id, so that a tag handed
   back for the wrong entity shows. */
static inline uint64_t test_tag(uint64_t id)
{
  return (id ^ 0x5bd1e995u) * 0x9e3779b97f4a7c15u;
}

/* aoi_add from the fields one by one, the tag being test_tag(id). */
static inline int test_add(aoi_world *w, uint64_t id, float x, float y,
                           float radius, unsigned flags, uint32_t layers,
                           uint32_t interest)
{
  return aoi_add(w, &(aoi_entity){.id = id,
                                  .tag = test_tag(id),
                                  .x = x,
                                  .y = y,
                                  .radius = radius,
                                  .flags = flags,
                                  .layers = layers,
                                  .interest = interest});
}

/* Hooks over malloc, realloc and free, for the tests of internal modules. */
void *plain_alloc(void *user, size_t size);
void *plain_realloc(void *user, void *ptr, size_t old_size, size_t new_size);
void plain_free(void *user, void *ptr, size_t size);

#define COUNTER_ONWARD LLONG_MAX /* a span: fail every attempt from n on */

typedef struct counter {
  atomic_llong live_bytes, live_blocks;
  atomic_llong peak_bytes;              /* since it was last reset */
  atomic_llong attempts;                /* alloc and realloc calls */
  atomic_llong fail_from, fail_until;   /* attempts in [from, until) fail */
  atomic_llong period;                  /* or, if > 0, every period-th */
  atomic_llong budget;                  /* if > 0, the most live bytes */
  atomic_llong injected;                /* failures returned */
  atomic_llong wrong_sizes;             /* frees and reallocs of a wrong size */
  atomic_llong wrong_given, wrong_actual; /* the last one, for the message */
} counter;

void counter_reset(counter *c);
/* Fails `span` attempts (or COUNTER_ONWARD: all) from the n-th from now. */
void counter_arm(counter *c, long long n, long long span);
/* Fails the n-th attempt from now and every period-th after it, until
   disarmed. */
void counter_arm_every(counter *c, long long n, long long period);
void counter_disarm(counter *c);
/* The hooks, with c as their user pointer. */
aoi_allocator counting_allocator(counter *c);
void *counting_alloc(void *user, size_t size);
void *counting_realloc(void *user, void *ptr, size_t old_size,
                       size_t new_size);
void counting_free(void *user, void *ptr, size_t size);

/* A log of events as the host drained them: (watcher, event) pairs. */
typedef struct record {
  uint64_t watcher;
  aoi_event event;
} record;

typedef struct records {
  record *items;
  size_t count, capacity;
} records;

/* Appends one; aborts when memory runs out. */
void records_push(records *r, uint64_t watcher, const aoi_event *e);
void records_free(records *r);
/* The events of one aoi_deliver_slots callback as aoi_deliver gives them,
   written to `out` (room for leaves + enters + moves); returns how many. */
size_t slot_events_expand(const aoi_slot_events *e, aoi_event *out);
/* The same watcher, id, kind and tick, and the same position bit for bit
   (-0 and 0 differ); the tag is not compared. */
bool record_equal(const record *a, const record *b);
/* An event kind's name: "enter", "leave", "move", or "(bad kind)". */
const char *kind_name(uint32_t kind);

/* ---- random numbers ------------------------------------------------------ */

/* splitmix64: the next number of the stream `state`. */
uint64_t rng_next(uint64_t *state);
/* A number in [0, n) (0 when n is 0). */
size_t rng_below(uint64_t *state, size_t n);
/* xorshift64 (shifts 13, 7, 17): the stream of the internal modules'
   tests; `state` must not be 0. */
uint64_t xorshift64(uint64_t *state);
/* Orders uint64_t, for qsort and bsearch. */
int compare_u64(const void *a, const void *b);

/* ---- traces -------------------------------------------------------------- */

/* A trace as text: `length` characters and a NUL; {0} is empty. */
typedef struct trace_text {
  char *text;
  size_t length, capacity;
} trace_text;

#if defined(__GNUC__)
#define TEST_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TEST_PRINTF(f, a)
#endif

/* Appends one line of at most 255 characters (longer ones are cut) and its
   newline; aborts when memory runs out. */
void trace_line(trace_text *t, const char *format, ...) TEST_PRINTF(2, 3);
void trace_text_free(trace_text *t);
/* The config lines that open a trace: world, max-radius, hysteresis,
   moves, shape and one move-every a band. */
void trace_config(trace_text *t, const aoi_config *c);
/* An entity's flags as a trace writes them: "W", "M", "WM", or "X" for
   any other value. */
const char *flags_word(unsigned flags);

/* ---- this process's threads --------------------------------------------- */

/* The threads of this process (0 where /proc cannot tell). */
unsigned test_threads(void);
/* The count once it holds still: a joined thread leaves /proc a moment
   after its join. */
unsigned test_threads_settled(void);
/* The count between tests: after a thread was started and joined (a
   sanitizer may start a thread of its own at the first thread this
   process starts), settled. Aborts if no thread can be started. */
unsigned test_threads_at_rest(void);
/* Waits up to a second for the count to be `want`; returns the count. */
unsigned test_threads_become(unsigned want);

#endif
