/*
 * report.h: what aoi-bench measured, and the two ways it prints it: a table
 * for people, or one JSON object per line for scripts. aoi-bench.c fills
 * these structures; report.c only formats them (what each number means is
 * in aoi-bench.c's opening comment).
 */
#ifndef AOI_BENCH_REPORT_H
#define AOI_BENCH_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "aoi.h"
#include "scenario.h"

typedef struct bench_options {
  const scenario **scenarios;
  size_t scenario_count;
  unsigned *threads; /* as asked; 0 = one per core */
  size_t thread_count;
  uint32_t entities;
  double radius, neighbours, players, hysteresis;
  double step;
  int step_given; /* else step = radius / 20 */
  unsigned ticks, shards, rebalance;
  uint64_t seed;
  int moves;
  aoi_shape shape;
  double cell_size;
  int json, verify, baseline;
  double max_radius; /* --max-radius, when max_radius_given */
  int max_radius_given;
  float outlier_x, outlier_y; /* outlier: --outlier-at */
  double mix_share, mix_factor; /* mixed-radius: --mix */
  unsigned flood; /* flood: --flood */
} bench_options;

/* The baseline's figures for one scenario. */
typedef struct baseline_result {
  int ran;
  double tick_ms_median, tick_ms_p99, submit_ms_median;
  double events_per_tick;
  size_t peak_bytes;
  uint64_t checksum;
} baseline_result;

/* One shard after the last tick, and its mean compute time a tick. */
typedef struct shard_result {
  unsigned worker;
  uint32_t entities, ghosts;
  double compute_ms;
} shard_result;

/* One (scenario, threads) run of the engine. */
typedef struct run_result {
  unsigned threads_asked, threads, shards;
  double tick_ms_median, tick_ms_p99, tick_ms_max, tick_ms_mean;
  double submit_ms_median, drain_ms_median;
  /* frame: submit + tick + delivery (drain_ms: the delivery, all events
     taken out and copied once); the checksum of them, timed apart */
  double frame_ms_median, checksum_ms_median;
  int parallel_delivery; /* aoi_deliver on `threads` threads, else drain */
  double phase_ms_median[AOI_PHASE_COUNT];
  double updates_per_tick, events_per_tick;
  double ghosts_per_tick, handoffs_per_tick;
  uint64_t rebalances;
  double imbalance, worker_imbalance, entity_imbalance;
  shard_result *shard; /* `shards` entries */
  uint64_t peak_rss_bytes; /* 0 when /proc could not tell */
  size_t heap_peak_bytes;
  double allocs_per_tick, submit_allocs_per_tick, drain_allocs_per_tick;
  uint64_t checksum;
  int verified;
  double speedup, efficiency; /* against the sweep's first run */
  /* Cliff scenarios: the same crowd without its odd part, run just before
     this one at the same threads and shards. has_plain is 0 for the other
     scenarios. The ratios are this run's medians over the plain run's. */
  int has_plain;
  double plain_tick_ms_median, plain_submit_ms_median;
  double cliff_ratio, cliff_submit_ratio;
  uint64_t plain_checksum;
} run_result;

typedef struct scenario_result {
  const scenario *sc;
  double side, step;
  float max_radius; /* the world's, as configured */
  float mix_radius; /* mixed-radius: the long-sighted watchers' radius */
  baseline_result base;
  baseline_result plain_base; /* cliff scenarios: the plain crowd's */
  run_result *runs; /* one per --threads entry */
  size_t run_count;
} scenario_result;

void report_human(const bench_options *o, const scenario_result *s);
void report_json(const bench_options *o, const scenario_result *s);

#endif /* AOI_BENCH_REPORT_H */
