/*
 * algo.h: the four classic single-threaded AOI algorithms that aoi-bench
 * runs beside the engine, behind one interface: brute force (brute.c), the
 * nine-grid (ninegrid.c), the tower or lighthouse AOI (tower.c) and the
 * cross-linked list (xlist.c); and a fifth, candidate lists kept across
 * ticks (verlet.c), to measure a compute that follows change alone.
 *
 * Each keeps the semantics of docs/trace-format.md for what the bench feeds it
 * (the visibility rule of every shape, per-entity radius, layers and
 * interest, hysteresis, move events on or off, respawn as leave + enter,
 * the event order), so its events equal the engine's, and shares no code
 * with the engine. Operations are applied as they come (an incremental
 * algorithm does its work there) and their events come out of algo_tick,
 * one outbox per watcher. They are not validated beyond what a bench needs
 * (an add of a live id or a move of a dead one is refused with the
 * engine's error code). Out of memory exits, as the bench does.
 *
 * Everything here runs on one thread.
 */
#ifndef AOI_BENCH_ALGO_H
#define AOI_BENCH_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "aoi.h"

typedef struct algo algo;

typedef struct algo_params {
  /* hysteresis, move_events, shape, cell_size and the bounds (which size
     grids; entities outside them are still fine). */
  const aoi_config *config;
  /* The crowd's view radius (not max_radius: one long-sighted watcher
     does not coarsen everyone's grid, it scans more cells itself). */
  double radius;
  /* tower: the side of a tower; 0 for the default, the crowd's radius. */
  double tower_side;
  /* verlet: the skin, a share of the crowd's reach; 0 for the default,
     ALGO_VERLET_SKIN. */
  double skin;
} algo_params;

/* verlet's skin when algo_params.skin is 0: a quarter of the reach. */
#define ALGO_VERLET_SKIN 0.25

/* One algorithm: its name and its operations. The outboxes and the memory
   figures are common to all (algo_pending and below). */
typedef struct algo_class {
  const char *name;
  const char *summary;
  algo *(*create)(const algo_params *params);
  void (*destroy)(algo *a);
  int (*add)(algo *a, uint64_t id, float x, float y, float radius,
             unsigned flags, uint32_t layers, uint32_t interest);
  int (*move)(algo *a, uint64_t id, float x, float y);
  int (*remove)(algo *a, uint64_t id);
  void (*tick)(algo *a);
} algo_class;

extern const algo_class algo_brute, algo_ninegrid, algo_tower, algo_xlist,
    algo_verlet;

/* The five, in the order `--baseline all` runs them. */
#define ALGO_COUNT 5
extern const algo_class *const algo_classes[ALGO_COUNT];

/* NULL when there is no algorithm of that name. */
const algo_class *algo_find(const char *name);

algo *algo_create(const algo_class *cls, const algo_params *params);
/* Accepts NULL. */
void algo_destroy(algo *a);
const algo_class *algo_class_of(const algo *a);

/* 0, AOI_EEXIST or AOI_ENOENT. */
int algo_add(algo *a, uint64_t id, float x, float y, float radius,
             unsigned flags, uint32_t layers, uint32_t interest);
int algo_move(algo *a, uint64_t id, float x, float y);
int algo_remove(algo *a, uint64_t id);

/* Computes the views and this tick's events. The previous tick's events
   are discarded (the bench drains every tick). */
void algo_tick(algo *a);

/* The watchers with events this tick, ids ascending. Borrowed until the
   next algo_tick. */
size_t algo_pending(const algo *a, const uint64_t **ids);
/* The events of the i-th pending watcher, in output order. Borrowed
   likewise. */
void algo_events(const algo *a, size_t i, const aoi_event **events,
                 size_t *count);

/* How many times verlet made its lists (0 for the others). */
uint64_t algo_verlet_rebuilds(const algo *a);

/* Bytes the algorithm holds now, and the most it ever held. */
size_t algo_bytes(const algo *a);
size_t algo_peak_bytes(const algo *a);

#endif /* AOI_BENCH_ALGO_H */
