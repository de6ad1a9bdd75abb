/*
 * fuzz_replay.c: libFuzzer target over replay_run (tools/replay.c), the
 * replay aoi-replay does, with the input as the trace.
 *
 * Input: the first byte picks the layout, threads 1 + b % 3 and shards
 * 1 + (b / 3) % 7; the rest is the trace, read through fmemopen. The seed
 * corpus (corpus/replay/) is therefore one layout character followed by a
 * plain trace. Long traces are cut (MAX_TRACE_BYTES, MAX_TICKS) to keep
 * executions fast.
 *
 * Checks, on top of the sanitizers and libFuzzer's leak check: the exit
 * status is 0, 1 or 2, and the replay prints the same bytes to both streams
 * and returns the same status with the chosen layout as with one thread and
 * one shard, as docs/trace-format.md requires of every trace. A failed check
 * prints what differs and aborts, so libFuzzer saves the input.
 */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

/* Traces are cut after this many bytes, or after the line of this many
   `tick`s: a tick costs far more than a line (the workers wake up), and a
   longer trace tells a fuzzer little more. */
#define MAX_TRACE_BYTES (1u << 16)
#define MAX_TICKS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct run {
  int status;
  char *out, *err;
  size_t out_size, err_size;
} run;

/* Replays `trace` (size bytes, size >= 1) on one layout into `result`. */
static void replay_once(char *trace, size_t size, unsigned threads,
                        unsigned shards, run *result) {
  FILE *in = fmemopen(trace, size, "r");
  FILE *out = open_memstream(&result->out, &result->out_size);
  FILE *err = open_memstream(&result->err, &result->err_size);
  if (in == NULL || out == NULL || err == NULL) {
    fputs("fuzz_replay: cannot open the memory streams\n", stderr);
    abort();
  }
  replay_options options = {.threads = threads, .shards = shards};
  result->status = replay_run(in, "fuzz", out, err, &options);
  fclose(in);
  fclose(out);
  fclose(err);
  if (result->status < 0 || result->status > 2) {
    fprintf(stderr, "fuzz_replay: exit status %d\n", result->status);
    abort();
  }
}

/* Prints both streams from the start of the line where they first differ. */
/* The length of the trace's first `limit` bytes, cut after the line of its
   MAX_TICKS-th line that starts with `tick` (blanks first allowed). */
static size_t bounded_length(const uint8_t *trace, size_t limit) {
  size_t ticks = 0, i = 0;

  while (i < limit) {
    size_t word = i;
    while (word < limit && (trace[word] == ' ' || trace[word] == '\t'))
      word++;
    int is_tick = limit - word >= 4 && memcmp(trace + word, "tick", 4) == 0;
    const uint8_t *end = memchr(trace + i, '\n', limit - i);
    i = end != NULL ? (size_t)(end - trace) + 1 : limit;
    if (is_tick && ++ticks == MAX_TICKS)
      return i;
  }
  return limit;
}

static void show_difference(const char *what, const char *got, size_t got_size,
                            const char *want, size_t want_size) {
  size_t at = 0;
  while (at < got_size && at < want_size && got[at] == want[at])
    at++;
  if (at == got_size && at == want_size)
    return;
  while (at > 0 && got[at - 1] != '\n')
    at--;
  size_t got_left = got_size - at, want_left = want_size - at;
  fprintf(stderr, "---- %s, from byte %zu: this layout ----\n%.*s\n", what, at,
          (int)(got_left < 600 ? got_left : 600), got + at);
  fprintf(stderr, "---- %s, from byte %zu: one thread, one shard ----\n%.*s\n",
          what, at, (int)(want_left < 600 ? want_left : 600), want + at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  unsigned threads = 1 + data[0] % 3;
  unsigned shards = 1 + (unsigned)(data[0] / 3) % 7;
  size_t length = bounded_length(
      data + 1, size - 1 < MAX_TRACE_BYTES ? size - 1 : MAX_TRACE_BYTES);
  /* fmemopen wants a writable buffer and, portably, a size above 0: an
     empty trace becomes one blank line, which the replay ignores. */
  char *trace = malloc(length > 0 ? length : 1);
  if (trace == NULL)
    abort();
  if (length > 0)
    memcpy(trace, data + 1, length);
  else
    trace[0] = '\n';
  size_t trace_size = length > 0 ? length : 1;

  run reference, layout;
  memset(&reference, 0, sizeof reference);
  memset(&layout, 0, sizeof layout);
  replay_once(trace, trace_size, 1, 1, &reference);
  replay_once(trace, trace_size, threads, shards, &layout);
  if (layout.status != reference.status ||
      layout.out_size != reference.out_size ||
      memcmp(layout.out, reference.out, layout.out_size) != 0 ||
      layout.err_size != reference.err_size ||
      memcmp(layout.err, reference.err, layout.err_size) != 0) {
    fprintf(stderr,
            "fuzz_replay: --threads %u --shards %u differs from --threads 1 "
            "--shards 1 (status %d, reference %d)\n",
            threads, shards, layout.status, reference.status);
    show_difference("output", layout.out, layout.out_size, reference.out,
                    reference.out_size);
    show_difference("errors", layout.err, layout.err_size, reference.err,
                    reference.err_size);
    abort();
  }
  free(reference.out);
  free(reference.err);
  free(layout.out);
  free(layout.err);
  free(trace);
  return 0;
}
