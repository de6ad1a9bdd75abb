/*
 * replay.h: the replay of a trace (docs/trace-format.md) through the public API,
 * as aoi-replay does it, callable on any stream: aoi-replay's main is a thin
 * wrapper over replay_run, and the replay fuzz target feeds it memory.
 */
#ifndef AOI_REPLAY_H
#define AOI_REPLAY_H

#include <stdio.h>

#include "aoi.h"

/* How replay_run runs the trace; all zeros is one world of its own, with
   the library's default threads and shards. */
typedef struct replay_options {
  /* Each world's lanes (aoi_config.threads), and for AOI_RUN_POOL the
     pool's threads too; 0 = the library's default. */
  unsigned threads;
  /* Each world's shards; 0 = the library's default. */
  unsigned shards;
  /* Worlds that replay the same trace side by side; 0 = 1. */
  unsigned worlds;
  /* How they run: AOI_RUN_OWN, AOI_RUN_POOL (one pool for them all, made
     here) or AOI_RUN_CALLER. */
  aoi_run run;
  /* 1: tick with aoi_tick_many_begin and aoi_tick_many_end. */
  int async;
} replay_options;

/*
 * Reads the trace from `in` to its end and applies it to options->worlds
 * worlds at once, configured as `options` says. One world of its own,
 * without `async`, ticks with aoi_tick; any other setting ticks every
 * world with one aoi_tick_many (or its begin and end) per `tick`.
 * Writes `tick N` and the events after every tick to `out`, and `error LINE
 * CODE` for every rejected line to `err`, as docs/trace-format.md says:
 * the first world's, once every other world has been found to print the
 * same bytes and to reject the same lines with the same codes. A failure
 * that stops the replay (aoi_pool_create, aoi_create, a failed tick,
 * memory, threads, a read error, or a world that differs from the first)
 * flushes `out`, writes one `aoi-replay: ...` line to `err`, and returns
 * 2; `name` names the input in a read error's message. Returns the exit
 * status: 0 when every line applied, 1 when a line was rejected, 2 when
 * the trace could not be read or replayed. Frees everything it allocated;
 * closes none of the streams.
 */
int replay_run(FILE *in, const char *name, FILE *out, FILE *err,
               const replay_options *options);

#endif /* AOI_REPLAY_H */
