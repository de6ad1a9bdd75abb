/*
 * report.c: prints what aoi-bench measured. report_human writes one block
 * per scenario: the crowd, the algorithms, one paragraph per thread count
 * and the sweep table; report_json writes one object per (scenario,
 * threads) run on one line, and nothing else. A figure that was not
 * measured (an algorithm not in --baseline, RSS without /proc) is `null` in
 * JSON and `-` for people; so are the cliff figures (plain_*, cliff_*, and
 * the odd part's parameters) of a scenario that has no odd part. The
 * baseline_* keys are the first algorithm's; every algorithm has its own
 * algo_NAME_* keys on every line, whether it ran or not. A run of several
 * worlds (--worlds) leaves out what belongs to one world: the phases, the
 * imbalances and the per-shard table.
 */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

static const char *shape_name(aoi_shape shape)
{
  switch (shape) {
  case AOI_SHAPE_SQUARE:
    return "square";
  case AOI_SHAPE_CELLS:
    return "cells";
  case AOI_SHAPE_CIRCLE:
  default:
    return "circle";
  }
}

static double mib(double bytes)
{
  return bytes / (1024.0 * 1024.0);
}

/* The first algorithm's figures ("the baseline"), or NULL when none ran. */
static const algo_result *baseline_of(const scenario_result *s)
{
  return s->algo_count > 0 && s->algos[0].ran ? &s->algos[0] : NULL;
}

/* The baseline's median over the run's: how many times faster the engine
   is. NAN when there is no baseline. */
static double baseline_speedup(const scenario_result *s, const run_result *r)
{
  const algo_result *base = baseline_of(s);
  if (base == NULL || !(r->tick_ms_median > 0))
    return NAN;
  return base->tick_ms_median / r->tick_ms_median;
}

/* An algorithm's median tick with the odd part over its median without:
   what the odd part costs it. NAN without both. */
static double cliff_ratio_of(const algo_result *with,
                             const algo_result *without)
{
  if (!with->ran || !without->ran || !(without->tick_ms_median > 0))
    return NAN;
  return with->tick_ms_median / without->tick_ms_median;
}

static double baseline_cliff_ratio(const scenario_result *s)
{
  if (s->algo_count == 0)
    return NAN;
  return cliff_ratio_of(&s->algos[0], &s->plain_algos[0]);
}

/* Whether every algorithm that ran has this checksum. */
static int algos_agree(const scenario_result *s, uint64_t checksum)
{
  for (size_t k = 0; k < s->algo_count; k++)
    if (s->algos[k].ran && s->algos[k].checksum != checksum)
      return 0;
  return 1;
}

/* ---- for people --------------------------------------------------------- */

static void print_run(const bench_options *o, const scenario_result *s,
                      const run_result *r)
{
  printf("\n  threads %u", r->threads);
  if (r->threads_asked != r->threads)
    printf(" (asked 0: one per core)");
  printf(", shards %u\n", r->shards);
  printf("    tick ms     median %.3f  p99 %.3f  max %.3f  (%s alone)\n",
         r->tick_ms_median, r->tick_ms_p99, r->tick_ms_max,
         r->worlds > 1 ? "aoi_tick_many" : "aoi_tick");
  if (r->worlds == 1)
    printf("    phases ms   apply %.3f  exchange %.3f  compute %.3f"
           "  (medians of the slowest worker's)\n",
           r->phase_ms_median[AOI_PHASE_APPLY],
           r->phase_ms_median[AOI_PHASE_EXCHANGE],
           r->phase_ms_median[AOI_PHASE_COMPUTE]);
  if (isfinite(r->work_ms_median))
    printf("    cpu ms      work %.3f  span %.3f  predicted speedup %.2fx"
           "  (medians; work / span: on as many free cores as %s)\n",
           r->work_ms_median, r->span_ms_median, r->predicted_speedup,
           r->worlds > 1 ? "pool threads" : "lanes");
  printf("    os threads  ");
  if (r->os_threads >= 0)
    printf("%ld", r->os_threads);
  else
    printf("-");
  printf("  (the process's, after the warm-up: the engine's and the"
         " delivery's)\n");
  if (r->parallel_delivery)
    printf("    frame ms    %.3f = submit %.3f + tick + deliver %.3f  (medians;"
           " aoi_deliver on %u threads, every event copied out; checksum"
           " %.3f and the crowd's step %.3f apart)\n",
           r->frame_ms_median, r->submit_ms_median, r->drain_ms_median,
           r->threads, r->checksum_ms_median, r->crowd_ms_median);
  else
    printf("    host ms     submit %.3f  drain %.3f  (medians: the calls before"
           " the tick; pending + drain + checksum after)\n",
           r->submit_ms_median, r->drain_ms_median);
  if (r->has_plain)
    printf("    cliff       tick %.2fx  submit %.2fx  (medians over the plain"
           " crowd's, run just before: tick %.3f ms, submit %.3f ms; events"
           " %s)\n",
           r->cliff_ratio, r->cliff_submit_ratio, r->plain_tick_ms_median,
           r->plain_submit_ms_median,
           r->checksum == r->plain_checksum ? "the same" : "differ");
  double seconds = r->tick_ms_median / 1e3;
  printf("    throughput  %.3g updates/s  %.3g events/s  (a tick's, over the"
         " median tick)\n",
         seconds > 0 ? r->updates_per_tick / seconds : 0,
         seconds > 0 ? r->events_per_tick / seconds : 0);
  printf("    per tick    %.0f updates  %.0f events  %.0f ghosts  %.1f"
         " handoffs  (%" PRIu64 " rebalances in all)\n",
         r->updates_per_tick, r->events_per_tick, r->ghosts_per_tick,
         r->handoffs_per_tick, r->rebalances);
  if (r->worlds == 1)
    printf("    imbalance   shards %.3f  workers %.3f  entities %.3f"
           "  (max / mean: compute time, compute time, owned entities)\n",
           r->imbalance, r->worker_imbalance, r->entity_imbalance);
  printf("    memory      peak RSS ");
  if (r->peak_rss_bytes)
    printf("%.1f MiB", mib((double)r->peak_rss_bytes));
  else
    printf("-");
  printf("  engine heap peak %.1f MiB = %.0f B/entity; an empty world"
         " %.0f B\n",
         mib((double)r->heap_peak_bytes),
         (double)r->heap_peak_bytes / o->entities, r->world_empty_bytes);
  printf("    allocs      %.2f a tick  (submit %.2f, drain %.2f; last %u"
         " ticks)\n",
         r->allocs_per_tick, r->submit_allocs_per_tick,
         r->drain_allocs_per_tick, o->ticks - o->ticks / 2);
  double vs = baseline_speedup(s, r);
  if (isfinite(vs))
    printf("    baseline    %.2fx  (%s median tick / this one)\n", vs,
           s->algos[0].cls->name);
  printf("    checksum    %016" PRIx64, r->checksum);
  if (baseline_of(s) != NULL)
    printf("  (%s %s%s)",
           algos_agree(s, r->checksum) ? "equals" : "DIFFERS FROM",
           s->algo_count > 1 ? "every algorithm's" : "the baseline's",
           r->verified ? ", every event verified" : "");
  printf("\n");
  if (r->shards <= 1 || r->shard == NULL)
    return;
  if (r->shards > 32) {
    printf("    (%u shards: per-shard table left out)\n", r->shards);
    return;
  }
  printf("    shard  worker  entities  ghosts  compute ms/tick\n");
  for (unsigned i = 0; i < r->shards; i++)
    printf("    %5u  %6u  %8" PRIu32 "  %6" PRIu32 "  %15.3f\n", i,
           r->shard[i].worker, r->shard[i].entities, r->shard[i].ghosts,
           r->shard[i].compute_ms);
}

static void print_sweep(const scenario_result *s)
{
  int cliff = s->sc->odd != BENCH_ODD_NONE;
  /* predicted: the first run's tick over this one's span, what this
     run's speedup would be on as many free cores as it has threads */
  printf("\n  sweep   threads  shards  tick ms    p99 ms  speedup  "
         "efficiency   span ms  predicted  vs baseline  %schecksum\n",
         cliff ? "  cliff  " : "");
  for (size_t k = 0; k < s->run_count; k++) {
    const run_result *r = &s->runs[k];
    double vs = baseline_speedup(s, r);
    printf("          %7u  %6u  %7.3f  %8.3f  %7.2f  %10.2f  ", r->threads,
           r->shards, r->tick_ms_median, r->tick_ms_p99, r->speedup,
           r->efficiency);
    if (isfinite(r->span_ms_median) && r->span_ms_median > 0)
      printf("%8.3f  %8.2fx  ", r->span_ms_median,
             s->runs[0].tick_ms_median / r->span_ms_median);
    else
      printf("%8s  %9s  ", "-", "-");
    if (isfinite(vs))
      printf("%10.2fx", vs);
    else
      printf("%11s", "-");
    if (cliff)
      printf("  %6.2fx", r->cliff_ratio);
    printf("  %016" PRIx64 "\n", r->checksum);
  }
}

void report_human(const bench_options *o, const scenario_result *s)
{
  printf("%s: %s\n", s->sc->name, s->sc->summary);
  if (o->worlds > 1)
    printf("  worlds      %u of %" PRIu32 " entities each (seeds %" PRIu64
           " to %" PRIu64 "), on one pool, ticked by aoi_tick_many\n",
           o->worlds, o->entities / o->worlds, o->seed,
           o->seed + o->worlds - 1);
  printf("  crowd       %" PRIu32 " entities (players %.0f%%), radius %g,"
         " ~%g neighbours, side %.1f, step %g\n",
         o->entities / o->worlds, 100 * o->players, s->radius, s->neighbours,
         s->side, s->step);
  printf("  views       %s", shape_name(o->shape));
  if (o->shape == AOI_SHAPE_CELLS)
    printf(" %g", o->cell_size);
  printf(", hysteresis %g, moves %s; seed %" PRIu64 "; %u ticks after 1"
         " warm-up; max_radius %g\n",
         o->hysteresis, o->moves ? "on" : "off", o->seed, o->ticks,
         (double)s->max_radius);
  if (o->pin)
    printf("  pin         each worker bound to a CPU (aoi_config.pin_threads)\n");
  if (o->refs)
    printf("  refs        the engine's moves by aoi_move_ref, each entity's"
           " reference taken at its add\n");
  if (o->batch)
    printf("  batch       the engine's moves by id, each tick's in one"
           " aoi_move_many\n");
  if (o->slots)
    printf("  slots       delivery by aoi_deliver_slots: each event built into"
           " the wire from the entity table\n");
  if (o->sparse_ids)
    printf("  ids         spread over 64 bits (n x 0x9e3779b97f4a7c15),"
           " hashed by the id map\n");
  if (bench_policies(o)) {
    printf("  policies   ");
    if (o->appeal_share > 0)
      printf(" appeal %g of the markers at %g;", o->appeal_share,
             o->appeal_radius);
    if (o->cap > 0)
      printf(" cap %" PRIu32 ";", o->cap);
    if (o->spectator_cap > 0)
      printf(" spectator cap %" PRIu32 ";", o->spectator_cap);
    for (unsigned b = 0; b < o->band_count; b++)
      printf("%s%g:%" PRIu32, b == 0 ? " move-every " : ",",
             (double)o->bands[b].distance, o->bands[b].period);
    printf(" (the classic algorithms do not run)\n");
  }
  if (strcmp(s->sc->name, "idle") == 0 && o->walk_share != 0.05)
    printf("  walkers     %g%% of the crowd a tick\n", 100 * o->walk_share);
  switch (s->sc->odd) {
  case BENCH_ODD_OUTLIER:
    printf("  odd part    one marker, id %" PRIu32 " + 1, standing at (%g,"
           " %g)\n",
           o->entities / o->worlds, (double)o->outlier_x,
           (double)o->outlier_y);
    break;
  case BENCH_ODD_SPECTATOR:
    printf("  odd part    one watcher (not a marker), id %" PRIu32 " + 1,"
           " radius %g, standing at the centre\n",
           o->entities / o->worlds, (double)s->max_radius);
    break;
  case BENCH_ODD_MIXED:
    printf("  odd part    %g%% of the watchers have radius %g\n",
           100 * o->mix_share, (double)s->mix_radius);
    break;
  case BENCH_ODD_FLOOD:
    printf("  odd part    %u moves per entity a tick, its step last; the"
           " plain crowd makes its step alone (1%% respawn in both)\n",
           o->flood);
    break;
  case BENCH_ODD_NONE:
  default:
    break;
  }
  for (size_t k = 0; k < s->algo_count; k++) {
    const algo_result *a = &s->algos[k], *plain = &s->plain_algos[k];
    if (!a->ran)
      continue;
    printf("  %-11s %s, one thread: frame median %.3f ms (submit %.3f +"
           " tick %.3f; tick p99 %.3f); %.0f events/tick; heap peak %.0f"
           " B/entity\n",
           k == 0 ? "baseline" : "", a->cls->name, a->frame_ms_median,
           a->submit_ms_median, a->tick_ms_median, a->tick_ms_p99,
           a->events_per_tick, (double)a->peak_bytes / o->entities);
    if (plain->ran)
      printf("              plain crowd: tick median %.3f ms; %.0f"
             " events/tick; cliff %.2fx (what the odd part costs it)\n",
             plain->tick_ms_median, plain->events_per_tick,
             cliff_ratio_of(a, plain));
  }
  for (size_t k = 0; k < s->algo_count; k++) {
    if (s->algos[k].ran && s->algos[k].cls == &algo_tower)
      printf("              (towers of side %g)\n", s->tower_side);
    if (s->algos[k].ran && s->algos[k].cls == &algo_verlet)
      printf("              (verlet: skin %g of the reach; lists made %llu"
             " times in the run, the warm-up's among them)\n",
             o->skin > 0 ? o->skin : ALGO_VERLET_SKIN,
             (unsigned long long)s->algos[k].rebuilds);
  }
  if (baseline_of(s) == NULL)
    printf("  baseline    - (%s)\n",
           o->worlds > 1 ? "none with --worlds" : "--no-baseline");
  for (size_t k = 0; k < s->run_count; k++)
    print_run(o, s, &s->runs[k]);
  if (s->run_count > 1)
    print_sweep(s);
  printf("\n");
  fflush(stdout);
}

/* ---- JSON --------------------------------------------------------------- */

typedef struct json_line {
  int fields;
} json_line;

static void json_key(json_line *j, const char *key)
{
  printf("%s\"%s\":", j->fields++ ? "," : "{", key);
}

static void json_number(json_line *j, const char *key, double v)
{
  json_key(j, key);
  if (isfinite(v))
    printf("%.6g", v);
  else
    printf("null");
}

static void json_uint(json_line *j, const char *key, uint64_t v)
{
  json_key(j, key);
  printf("%" PRIu64, v);
}

/* Our strings are names and hex digits: nothing to escape. */
static void json_string(json_line *j, const char *key, const char *v)
{
  json_key(j, key);
  printf("\"%s\"", v);
}

static void json_bool(json_line *j, const char *key, int v)
{
  json_key(j, key);
  printf(v ? "true" : "false");
}

static void json_null(json_line *j, const char *key)
{
  json_key(j, key);
  printf("null");
}

static const char *algo_key(char *key, size_t size, const algo_class *cls,
                            const char *what)
{
  snprintf(key, size, "algo_%s_%s", cls->name, what);
  return key;
}

/* algo_NAME_*: one algorithm's figures, null when it did not run. */
static void json_algo(json_line *j, const bench_options *o,
                      const scenario_result *s, const run_result *r,
                      const algo_class *cls)
{
  static const char *const keys[] = {
      "tick_ms_median", "submit_ms_median", "frame_ms_median",
      "events_per_tick", "bytes_per_entity", "checksum_match"};
  const algo_result *a = NULL;
  for (size_t k = 0; k < s->algo_count; k++)
    if (s->algos[k].cls == cls && s->algos[k].ran)
      a = &s->algos[k];
  char key[64];
  if (a == NULL) {
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
      json_null(j, algo_key(key, sizeof(key), cls, keys[k]));
    if (cls == &algo_verlet)
      json_null(j, "verlet_rebuilds");
    return;
  }
  json_number(j, algo_key(key, sizeof(key), cls, keys[0]), a->tick_ms_median);
  json_number(j, algo_key(key, sizeof(key), cls, keys[1]),
              a->submit_ms_median);
  json_number(j, algo_key(key, sizeof(key), cls, keys[2]),
              a->frame_ms_median);
  json_number(j, algo_key(key, sizeof(key), cls, keys[3]),
              a->events_per_tick);
  json_number(j, algo_key(key, sizeof(key), cls, keys[4]),
              (double)a->peak_bytes / o->entities);
  json_bool(j, algo_key(key, sizeof(key), cls, keys[5]),
            r->checksum == a->checksum);
  if (cls == &algo_verlet)
    json_number(j, "verlet_rebuilds", (double)a->rebuilds);
}

static void json_run(const bench_options *o, const scenario_result *s,
                     const run_result *r)
{
  json_line j = {0};
  char hex[17];
  double seconds = r->tick_ms_median / 1e3;
  json_string(&j, "scenario", s->sc->name);
  json_uint(&j, "entities", o->entities);
  json_uint(&j, "worlds", r->worlds);
  json_uint(&j, "world_entities", o->entities / r->worlds);
  json_number(&j, "players", o->players);
  json_number(&j, "radius", s->radius);
  json_number(&j, "neighbours", s->neighbours);
  json_number(&j, "side", s->side);
  json_number(&j, "step", s->step);
  json_string(&j, "shape", shape_name(o->shape));
  if (o->shape == AOI_SHAPE_CELLS)
    json_number(&j, "cell_size", o->cell_size);
  else
    json_null(&j, "cell_size");
  json_number(&j, "hysteresis", o->hysteresis);
  json_bool(&j, "moves", o->moves);
  json_bool(&j, "refs", o->refs);
  json_bool(&j, "pin", o->pin);
  json_bool(&j, "sparse_ids", o->sparse_ids);
  json_bool(&j, "batch", o->batch);
  json_bool(&j, "slots", o->slots);
  json_number(&j, "appeal_share", o->appeal_share);
  json_number(&j, "appeal_radius", o->appeal_radius);
  json_uint(&j, "cap", o->cap);
  json_uint(&j, "spectator_cap", o->spectator_cap);
  json_uint(&j, "move_bands", o->band_count);
  json_uint(&j, "seed", o->seed);
  json_uint(&j, "threads", r->threads);
  json_uint(&j, "shards", r->shards);
  json_uint(&j, "ticks", o->ticks);
  json_uint(&j, "warmup", o->warmup);
  json_number(&j, "gap_ms", o->gap_ms);
  json_number(&j, "tick_ms_median", r->tick_ms_median);
  json_number(&j, "tick_ms_p99", r->tick_ms_p99);
  json_number(&j, "tick_ms_max", r->tick_ms_max);
  json_number(&j, "tick_ms_mean", r->tick_ms_mean);
  json_number(&j, "submit_ms_median", r->submit_ms_median);
  json_number(&j, "crowd_ms_median", r->crowd_ms_median);
  json_number(&j, "drain_ms_median", r->drain_ms_median);
  json_number(&j, "deliver_ms_median", r->drain_ms_median);
  json_number(&j, "frame_ms_median", r->frame_ms_median);
  json_number(&j, "checksum_ms_median", r->checksum_ms_median);
  json_number(&j, "apply_ms_median", r->phase_ms_median[AOI_PHASE_APPLY]);
  json_number(&j, "exchange_ms_median",
              r->phase_ms_median[AOI_PHASE_EXCHANGE]);
  json_number(&j, "compute_ms_median", r->phase_ms_median[AOI_PHASE_COMPUTE]);
  json_number(&j, "work_ms_median", r->work_ms_median);
  json_number(&j, "span_ms_median", r->span_ms_median);
  json_number(&j, "predicted_speedup", r->predicted_speedup);
  if (r->os_threads >= 0)
    json_uint(&j, "os_threads", (uint64_t)r->os_threads);
  else
    json_null(&j, "os_threads");
  json_bool(&j, "measure_cpu", o->measure_cpu);
  json_number(&j, "updates_per_tick", r->updates_per_tick);
  json_number(&j, "events_per_tick", r->events_per_tick);
  json_number(&j, "updates_per_s",
              seconds > 0 ? r->updates_per_tick / seconds : NAN);
  json_number(&j, "events_per_s",
              seconds > 0 ? r->events_per_tick / seconds : NAN);
  json_number(&j, "handoffs_per_tick", r->handoffs_per_tick);
  json_number(&j, "ghosts_per_tick", r->ghosts_per_tick);
  json_uint(&j, "rebalances", r->rebalances);
  json_number(&j, "imbalance", r->imbalance);
  json_number(&j, "worker_imbalance", r->worker_imbalance);
  json_number(&j, "entity_imbalance", r->entity_imbalance);
  if (r->peak_rss_bytes)
    json_uint(&j, "peak_rss_bytes", r->peak_rss_bytes);
  else
    json_null(&j, "peak_rss_bytes");
  json_uint(&j, "heap_peak_bytes", r->heap_peak_bytes);
  json_number(&j, "world_empty_bytes", r->world_empty_bytes);
  json_number(&j, "bytes_per_entity",
              (double)r->heap_peak_bytes / o->entities);
  json_number(&j, "allocs_per_tick", r->allocs_per_tick);
  json_number(&j, "submit_allocs_per_tick", r->submit_allocs_per_tick);
  json_number(&j, "drain_allocs_per_tick", r->drain_allocs_per_tick);
  json_number(&j, "speedup", r->speedup);
  json_number(&j, "efficiency", r->efficiency);
  snprintf(hex, sizeof(hex), "%016" PRIx64, r->checksum);
  json_string(&j, "checksum", hex);
  const algo_result *base = baseline_of(s);
  if (base != NULL) {
    json_string(&j, "baseline", base->cls->name);
    json_number(&j, "baseline_tick_ms_median", base->tick_ms_median);
    json_number(&j, "baseline_tick_ms_p99", base->tick_ms_p99);
    json_number(&j, "baseline_speedup", baseline_speedup(s, r));
    json_number(&j, "baseline_bytes_per_entity",
                (double)base->peak_bytes / o->entities);
    json_bool(&j, "baseline_checksum_match", r->checksum == base->checksum);
  } else {
    json_null(&j, "baseline");
    json_null(&j, "baseline_tick_ms_median");
    json_null(&j, "baseline_tick_ms_p99");
    json_null(&j, "baseline_speedup");
    json_null(&j, "baseline_bytes_per_entity");
    json_null(&j, "baseline_checksum_match");
  }
  for (size_t c = 0; c < ALGO_COUNT; c++)
    json_algo(&j, o, s, r, algo_classes[c]);
  json_number(&j, "tower_side", s->tower_side);
  json_bool(&j, "verified", r->verified);
  json_number(&j, "max_radius", s->max_radius);
  if (r->has_plain) {
    json_number(&j, "plain_tick_ms_median", r->plain_tick_ms_median);
    json_number(&j, "plain_submit_ms_median", r->plain_submit_ms_median);
    json_number(&j, "cliff_ratio", r->cliff_ratio);
    json_number(&j, "cliff_submit_ratio", r->cliff_submit_ratio);
    json_bool(&j, "plain_checksum_match", r->checksum == r->plain_checksum);
    json_number(&j, "baseline_cliff_ratio", baseline_cliff_ratio(s));
  } else {
    json_null(&j, "plain_tick_ms_median");
    json_null(&j, "plain_submit_ms_median");
    json_null(&j, "cliff_ratio");
    json_null(&j, "cliff_submit_ratio");
    json_null(&j, "plain_checksum_match");
    json_null(&j, "baseline_cliff_ratio");
  }
  if (s->sc->odd == BENCH_ODD_OUTLIER) {
    json_number(&j, "outlier_x", o->outlier_x);
    json_number(&j, "outlier_y", o->outlier_y);
  } else {
    json_null(&j, "outlier_x");
    json_null(&j, "outlier_y");
  }
  if (s->sc->odd == BENCH_ODD_MIXED) {
    json_number(&j, "mix_share", o->mix_share);
    json_number(&j, "mix_radius", s->mix_radius);
  } else {
    json_null(&j, "mix_share");
    json_null(&j, "mix_radius");
  }
  if (s->sc->odd == BENCH_ODD_FLOOD)
    json_uint(&j, "flood", o->flood);
  else
    json_null(&j, "flood");
  if (strcmp(s->sc->name, "idle") == 0)
    json_number(&j, "walk_share", o->walk_share);
  else
    json_null(&j, "walk_share");
  printf("}\n");
}

void report_json(const bench_options *o, const scenario_result *s)
{
  for (size_t k = 0; k < s->run_count; k++)
    json_run(o, s, &s->runs[k]);
  fflush(stdout);
}
