/*
 * model.h: a brute-force model of docs/trace-format.md, the oracle that the
 * engine is tested against (test_differential, model-replay).
 *
 * It is written from the spec alone (trace format v2: appeal radius, view
 * caps, move bands) and shares no code with the engine: one array of
 * entities, every watcher checked against every marker at each tick, every
 * distance computed in double, a capped view chosen by a full sort. Slow on
 * purpose and simple enough to be read against the spec line by line.
 *
 * The API mirrors aoi.h. Operations are validated at once, in the order
 * aoi.h gives (AOI_EEXIST / AOI_ENOENT, then AOI_EFLAGS, AOI_ECOORD,
 * AOI_ERADIUS), change nothing when they fail, and are seen by watchers at
 * the next model_tick only. The queries answer from the state as of the last
 * tick; whether an id is live is judged as submitted, so an entity added
 * since the last tick is live with an empty view and one removed since is
 * not live.
 */
#ifndef AOI_MODEL_H
#define AOI_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "aoi.h"

typedef struct model model;

/* One event of one watcher, as the engine's outbox holds it. */
typedef struct model_event {
  uint64_t watcher;
  aoi_event event;
} model_event;

/* Uses max_radius, hysteresis, move_events, shape, cell_size and the move
   bands; ignores threads, shards, bounds, rebalance_interval and the
   allocator. NULL when the config is out of range (as aoi_create's
   AOI_EINVAL) or memory runs out. */
model *model_create(const aoi_config *config);
/* Accepts NULL. */
void model_destroy(model *m);

int model_add(model *m, uint64_t id, float x, float y, float radius,
              unsigned flags, uint32_t layers, uint32_t interest);
int model_move(model *m, uint64_t id, float x, float y);
int model_set_radius(model *m, uint64_t id, float radius);
int model_set_layers(model *m, uint64_t id, uint32_t layers,
                     uint32_t interest);
/* As aoi_set_appeal and aoi_set_cap: AOI_ENOENT, then (appeal only)
   AOI_ERADIUS for an appeal that is NaN, infinite, negative or above
   max_radius. Both are 0 at model_add, so a respawn resets them. */
int model_set_appeal(model *m, uint64_t id, float appeal);
int model_set_cap(model *m, uint64_t id, uint32_t cap);
int model_remove(model *m, uint64_t id);

/* Computes the next tick. 0, or AOI_ENOMEM with nothing changed. */
int model_tick(model *m);

/* The events of the last tick, in output order: watcher id ascending, then
   leaves, enters, moves, each by id ascending. *events is valid until the
   next model_tick or model_destroy. */
size_t model_events(const model *m, const model_event **events);

/* As aoi_view, aoi_watchers_of and aoi_query_circle: at most `capacity` ids
   ascending to `ids`, the total to *count. */
int model_view(const model *m, uint64_t id, uint64_t *ids, size_t capacity,
               size_t *count);
/* The watchers whose view as of the last tick holds entity `id`. */
int model_watchers_of(const model *m, uint64_t id, uint64_t *ids,
                      size_t capacity, size_t *count);
int model_query_circle(const model *m, float x, float y, float radius,
                       uint32_t layer_mask, uint64_t *ids, size_t capacity,
                       size_t *count);

#endif /* AOI_MODEL_H */
