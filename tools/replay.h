/*
 * replay.h: the replay of a trace (docs/trace-format.md) through the public API,
 * as aoi-replay does it, callable on any stream: aoi-replay's main is a thin
 * wrapper over replay_run, and the replay fuzz target feeds it memory.
 */
#ifndef AOI_REPLAY_H
#define AOI_REPLAY_H

#include <stdio.h>

/*
 * Reads the trace from `in` to its end and applies it to one world with
 * `threads` worker threads and `shards` shards (0 = the library's default).
 * Writes `tick N` and the events after every tick to `out`, and `error LINE
 * CODE` for every rejected line to `err`, as docs/trace-format.md says. A failure
 * that stops the replay (aoi_create, a failed tick, memory, threads, a read
 * error) flushes `out`, writes one `aoi-replay: ...` line to `err`, and
 * returns 2; `name` names the input in a read error's message. Returns the
 * exit status: 0 when every line applied, 1 when a line was rejected, 2 when
 * the trace could not be read or replayed. Frees everything it allocated;
 * closes none of the streams.
 */
int replay_run(FILE *in, const char *name, FILE *out, FILE *err,
               unsigned threads, unsigned shards);

#endif /* AOI_REPLAY_H */
