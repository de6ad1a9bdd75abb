/*
 * api_support.h: what the tests of the public API share (test_config,
 * test_ops, test_events, test_queries, test_shards, test_oom): the layouts
 * they run on, worlds over (0, 0) - (100, 100), event logs drained and
 * compared, and query answers compared.
 *
 * Every helper asserts with cmocka, so only a test's main thread may call
 * them; a failure message names the layout of the last config_for.
 */
#ifndef AOI_TESTS_API_SUPPORT_H
#define AOI_TESTS_API_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "aoi.h"
#include "support.h"

#define SENTINEL UINT64_C(0x5e5e5e5e5e5e5e5e)
#define ALL UINT32_MAX
#define WM (AOI_WATCHER | AOI_MARKER)
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

typedef struct layout {
  unsigned threads, shards;
} layout;

/* Threads 1, 2, 4 by shards 1, 3, 8. */
extern const layout layouts[9];

/* The layout of the last config_for, for failure messages. */
extern layout current_layout;

/* ---- worlds ------------------------------------------------------------- */

/* A config over the bounds (0, 0) - (100, 100) for layout `l`. */
aoi_config config_for(layout l, float max_radius);
aoi_world *create_or_fail(const aoi_config *c);
aoi_world *world_for(layout l, float max_radius);

/* ---- events ------------------------------------------------------------- */

/* Drains every pending watcher, in the order aoi_pending gives (which must
   ascend), onto `out`; each must have had events. */
void drain_all(aoi_world *w, records *out);
/* Ticks and drains every outbox into `out` (emptied first). */
void tick_and_drain(aoi_world *w, records *out);
/* The events got are exactly `want`, each with its entity's test_tag. */
void expect_records(const records *got, const record *want, size_t n);
/* Watcher `watcher` drains exactly `want`. */
void expect_drain(aoi_world *w, uint64_t watcher, const record *want,
                  size_t n);
void expect_no_events(aoi_world *w);

/* ---- query answers ------------------------------------------------------ */

#define MAX_IDS 256

typedef struct answer {
  uint64_t ids[MAX_IDS];
  size_t count;
} answer;

void expect_ids(const answer *a, const uint64_t *want, size_t n);
void view_of(aoi_world *w, uint64_t id, answer *a);
void watchers_of(aoi_world *w, uint64_t id, answer *a);
void circle(aoi_world *w, float x, float y, float r, uint32_t mask,
            answer *a);

#define EXPECT_VIEW(w, id, ...)                                               \
  do {                                                                        \
    static const uint64_t want_[] = {__VA_ARGS__};                            \
    answer a_;                                                                \
    view_of((w), (id), &a_);                                                  \
    expect_ids(&a_, want_, COUNT_OF(want_));                                  \
  } while (0)

#define EXPECT_EMPTY_VIEW(w, id)                                              \
  do {                                                                        \
    answer a_;                                                                \
    view_of((w), (id), &a_);                                                  \
    expect_ids(&a_, NULL, 0);                                                 \
  } while (0)

/* ---- the counting allocator (support.h) --------------------------------- */

/* Every block is freed, and every free and realloc named its block's true
   size. `where` names the run in the message (NULL: the current layout). */
void expect_all_freed(counter *c, const char *where);

#endif
