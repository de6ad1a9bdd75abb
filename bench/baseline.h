/*
 * baseline.h: the classic single-threaded nine-grid AOI, the yardstick
 * aoi-bench measures the engine against and checks its events with.
 *
 * It keeps the semantics of TRACE_FORMAT.md (the visibility rule of every
 * shape, hysteresis, move events on or off, respawn as leave + enter, the
 * event order) and shares no code with the engine. Operations apply at once
 * and are seen at the next baseline_tick; they are not validated beyond
 * what a bench needs (an add of a live id or a move of a dead one is
 * refused with the engine's error code).
 */
#ifndef AOI_BENCH_BASELINE_H
#define AOI_BENCH_BASELINE_H

#include <stddef.h>
#include <stdint.h>

#include "aoi.h"

typedef struct baseline baseline;

/* Uses hysteresis, move_events, shape, cell_size and the bounds (to size
   its grid; entities outside are still fine). The grid is cut for
   watchers of view radius `radius` (the crowd's, not max_radius: one
   long-sighted watcher does not coarsen everyone's scan, it scans more
   cells itself). Exits on out of memory, as the bench does. */
baseline *baseline_create(const aoi_config *config, double radius);
/* Accepts NULL. */
void baseline_destroy(baseline *b);

/* 0, AOI_EEXIST or AOI_ENOENT. */
int baseline_add(baseline *b, uint64_t id, float x, float y, float radius,
                 unsigned flags, uint32_t layers, uint32_t interest);
int baseline_move(baseline *b, uint64_t id, float x, float y);
int baseline_remove(baseline *b, uint64_t id);

/* Computes the views and this tick's events. The previous tick's events
   are discarded (the bench drains every tick). */
void baseline_tick(baseline *b);

/* The watchers with events this tick, ids ascending. Borrowed until the
   next baseline_tick. */
size_t baseline_pending(const baseline *b, const uint64_t **ids);
/* The events of the i-th pending watcher, in output order. Borrowed
   likewise. */
void baseline_events(const baseline *b, size_t i, const aoi_event **events,
                     size_t *count);

/* Bytes the baseline holds now, and the most it ever held. */
size_t baseline_bytes(const baseline *b);
size_t baseline_peak_bytes(const baseline *b);

#endif /* AOI_BENCH_BASELINE_H */
