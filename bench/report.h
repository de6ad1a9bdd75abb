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

#include "algo.h"
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
  unsigned ticks, warmup, shards, rebalance;
  double gap_ms; /* --gap: the host's own work between frames, busy */
  uint64_t seed;
  int moves;
  aoi_shape shape;
  double cell_size;
  int json, verify;
  int refs; /* --refs: the engine's moves go through aoi_move_ref */
  const char *dump_ops; /* --dump-ops FILE, or NULL */
  int batch; /* --batch: the engine's moves go through aoi_move_many */
  int slots; /* --slots: delivery through aoi_deliver_slots */
  int sparse_ids; /* --sparse-ids: ids spread over 64 bits */
  int pin;        /* --pin on: aoi_config.pin_threads */
  /* --worlds: that many worlds of entities / worlds each, on one pool;
     run_engine and the crowds see a copy whose `entities` is a world's */
  unsigned worlds;
  int measure_cpu; /* --measure-cpu on: aoi_config.measure_cpu */
  /* --baseline: the algorithms run beside the engine, the first one the
     "baseline" of the JSON's baseline_* keys; none with --no-baseline */
  const algo_class *algos[ALGO_COUNT];
  size_t algo_count;
  double tower_side; /* --tower-side; 0: the crowd's radius */
  double skin;       /* --skin; 0: a quarter of the reach */
  int force_brute;   /* --force-brute */
  double max_radius; /* --max-radius, when max_radius_given */
  int max_radius_given;
  float outlier_x, outlier_y; /* outlier: --outlier-at */
  double mix_share, mix_factor; /* mixed-radius: --mix */
  double walk_share;            /* idle: --walkers */
  unsigned flood; /* flood: --flood */
  /* Interest policies (none by default): --appeal SHARE:RADIUS gives that
     share of the markers that appeal; --cap K caps every watcher's view;
     --move-every D:P,... sets the move bands. With any of them the classic
     algorithms, which have no policies, do not run. */
  double appeal_share, appeal_radius;
  uint32_t cap;
  uint32_t spectator_cap; /* spectator: the camera's cap alone, else --cap */
  aoi_move_band bands[AOI_MAX_MOVE_BANDS];
  unsigned band_count;
} bench_options;

/* Whether any interest policy is asked for. */
static inline int bench_policies(const bench_options *o)
{
  return o->appeal_share > 0 || o->cap > 0 || o->spectator_cap > 0 ||
         o->band_count > 0;
}

/* One algorithm's figures for one scenario (all medians over the measured
   ticks). Its submit is where an incremental algorithm does much of its
   work, so frame = submit + tick, tick by tick, is what compares. */
typedef struct algo_result {
  const algo_class *cls;
  int ran;
  double tick_ms_median, tick_ms_p99, submit_ms_median, frame_ms_median;
  double events_per_tick;
  size_t peak_bytes;
  uint64_t checksum;
  uint64_t rebuilds; /* verlet: how many ticks made its lists */
} algo_result;

/* One shard after the last tick, and its mean compute time a tick. */
typedef struct shard_result {
  unsigned worker;
  uint32_t entities, ghosts;
  double compute_ms;
} shard_result;

/* One (scenario, threads) run of the engine: of one world, or of
   --worlds worlds ticked together (then the shard figures, the phases and
   the imbalances are left out: NAN, and `shard` NULL). */
typedef struct run_result {
  unsigned worlds;
  unsigned threads_asked, threads, shards; /* threads: a world's lanes, or
                                              the pool's threads */
  double tick_ms_median, tick_ms_p99, tick_ms_max, tick_ms_mean;
  double submit_ms_median, drain_ms_median;
  double crowd_ms_median; /* the crowd's step, apart from submit and frame */
  /* frame: submit + tick + delivery (drain_ms: the delivery, all events
     taken out and copied once); the checksum of them, timed apart */
  double frame_ms_median, checksum_ms_median;
  int parallel_delivery; /* aoi_deliver on `threads` threads, else drain */
  double phase_ms_median[AOI_PHASE_COUNT];
  /* With --measure-cpu on, else NAN: the median tick's CPU time on every
     thread (work) and its critical path (span; for several worlds, the
     list-scheduling estimate in aoi-bench.c), and work / span */
  double work_ms_median, span_ms_median, predicted_speedup;
  long os_threads; /* the process's threads after the warm-up; -1: unknown */
  double world_empty_bytes; /* the heap of one world before any add */
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
  double radius, neighbours; /* the crowd's: the flags', times sparse's */
  double side, step;
  float max_radius; /* the world's, as configured */
  float mix_radius; /* mixed-radius: the long-sighted watchers' radius */
  double tower_side; /* the tower's, as asked (it may widen: too many) */
  algo_result algos[ALGO_COUNT]; /* o->algos, in order */
  algo_result plain_algos[ALGO_COUNT]; /* cliff scenarios: the plain crowd's */
  size_t algo_count;
  run_result *runs; /* one per --threads entry */
  size_t run_count;
} scenario_result;

void report_human(const bench_options *o, const scenario_result *s);
void report_json(const bench_options *o, const scenario_result *s);

#endif /* AOI_BENCH_REPORT_H */
