/*
 * replay.c: applies a trace (docs/trace-format.md) to one world, or to
 * several side by side, through the public API and prints, after every
 * `tick`, the events of every watcher.
 *
 * It owns only the glue between trace.c and aoi.h: the config the trace's
 * config lines build, the lazy creation of the worlds on the first command
 * that is not a config line, the mapping of API error codes to the trace's
 * error codes, and the output format. Config lines are accepted until an
 * `add` has succeeded: before that the worlds are still empty, so a config
 * line destroys them and the next command creates them again with the new
 * config, and ticks them as often as the empty ones were ticked so that
 * tick numbers stay those printed. A rejected line changes nothing, so a
 * failed `add` does not lock the config.
 *
 * Several worlds (replay_options.worlds) get every line, each on its own,
 * and are ticked together by one aoi_tick_many. Every world must answer
 * each line with the same code and print the same bytes after each tick
 * as the first: the replay prints the first world's, so that any number
 * of worlds prints what one does, and stops at the first world that
 * differs. Each world's events of a tick are gathered in a buffer of its own
 * for that comparison, the one world's too, so that one path prints them.
 *
 * A failure that a trace cannot cause (aoi_pool_create or aoi_create
 * refused, a tick, pending list or drain failed, an operation returned
 * AOI_ENOMEM or AOI_ESYS, a world differs from the first) stops the
 * replay: the lines after it are not read, and replay_run frees what it
 * holds and returns 2. It never exits the process, so that a fuzz target
 * can call it in a loop.
 */
#define _POSIX_C_SOURCE 200809L

#include "replay.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "aoi.h"
#include "trace.h"

/* What aoi_tick_many leaves in results[i] when it wrote nothing: no
   result is positive. */
#define NOT_WRITTEN 1

/* One world's output of one tick. */
typedef struct buffer {
  char *data;
  size_t length, capacity;
  unsigned long lines;
} buffer;

typedef struct replay {
  aoi_config config;
  unsigned pool_threads; /* AOI_RUN_POOL: the pool's threads */
  aoi_pool *pool;        /* AOI_RUN_POOL: made on first use, kept */
  aoi_world **worlds;    /* `count` of them: all NULL, or all live */
  unsigned count;
  int many;              /* tick with aoi_tick_many, not aoi_tick */
  int async;             /* ... with its begin and end */
  int *results;          /* aoi_tick_many's, `count` of them */
  buffer *buffers;       /* each world's output of the tick at hand */
  FILE *out, *err;
  int config_locked; /* an add has succeeded: config lines are syntax */
  unsigned long ticks;
  unsigned long out_lines; /* lines written to `out` */
  int rejected;
  int failed; /* a fatal error was reported: stop */
} replay;

/* Reports a failure that stops the replay. */
static void fatal(replay *r, const char *what, int code) {
  fflush(r->out);
  fprintf(r->err, "aoi-replay: %s: %s\n", what, aoi_strerror(code));
  r->failed = 1;
}

/* fatal() of a call on world `index`, which it names when there are
   several. */
static void fatal_in(replay *r, const char *what, unsigned index, int code) {
  char named[96];

  if (r->count == 1) {
    fatal(r, what, code);
    return;
  }
  snprintf(named, sizeof named, "%s (world %u)", what, index);
  fatal(r, named, code);
}

/* Reports a world whose replay differs from the first world's. */
static void differs(replay *r, unsigned index, const char *format, ...) {
  va_list args;

  fflush(r->out);
  fprintf(r->err, "aoi-replay: world %u differs from world 0 ", index);
  va_start(args, format);
  vfprintf(r->err, format, args);
  va_end(args);
  fputc('\n', r->err);
  r->failed = 1;
}

static void report(replay *r, unsigned long line, const char *code) {
  fprintf(r->err, "error %lu %s\n", line, code);
  r->rejected = 1;
}

/* Appends `length` bytes (lines) to `t`; -1 (after a fatal report) when
   it cannot grow. */
static int buffer_append(replay *r, buffer *t, const char *line,
                         size_t length) {
  if (t->capacity - t->length < length) {
    size_t capacity = t->capacity > 0 ? t->capacity : 4096;
    while (capacity - t->length < length)
      capacity *= 2;
    char *data = realloc(t->data, capacity);
    if (data == NULL) {
      fatal(r, "output", AOI_ENOMEM);
      return -1;
    }
    t->data = data;
    t->capacity = capacity;
  }
  memcpy(t->data + t->length, line, length);
  t->length += length;
  t->lines++;
  return 0;
}

static void destroy_worlds(replay *r) {
  for (unsigned i = 0; i < r->count; i++) {
    aoi_destroy(r->worlds[i]);
    r->worlds[i] = NULL;
  }
}

/* Ticks every world once: aoi_tick for one world of its own, else one
   aoi_tick_many (or its begin and end). 0, or -1 after a fatal report. */
static int tick_worlds(replay *r) {
  const char *call;
  int rc;

  if (!r->many) {
    rc = aoi_tick(r->worlds[0]);
    if (rc != 0) {
      fatal(r, "aoi_tick", rc);
      return -1;
    }
    return 0;
  }
  for (unsigned i = 0; i < r->count; i++)
    r->results[i] = NOT_WRITTEN;
  if (r->async) {
    rc = aoi_tick_many_begin(r->worlds, r->count);
    if (rc != 0) {
      fatal(r, "aoi_tick_many_begin", rc);
      return -1;
    }
    call = "aoi_tick_many_end";
    rc = aoi_tick_many_end(r->worlds, r->count, r->results);
  } else {
    call = "aoi_tick_many";
    rc = aoi_tick_many(r->worlds, r->count, r->results);
  }
  if (rc == 0)
    return 0;
  /* A world's failed tick, or else the call refused (nothing written). */
  for (unsigned i = 0; i < r->count; i++) {
    if (r->results[i] != 0 && r->results[i] != NOT_WRITTEN) {
      fatal_in(r, call, i, r->results[i]);
      return -1;
    }
  }
  fatal(r, call, rc);
  return -1;
}

/* Creates the worlds (and the pool) on first use; ticks worlds created
   again after ticks of empty ones as often, so that their tick numbers
   are the printed ones (move-every's rate depends on them). 0, or -1 after
   a fatal report. */
static int create_worlds(replay *r) {
  if (r->worlds[0] != NULL)
    return 0;
  if (r->config.run == AOI_RUN_POOL && r->pool == NULL) {
    aoi_pool_config pool_config;
    aoi_pool_config_default(&pool_config);
    pool_config.threads = r->pool_threads;
    int rc = aoi_pool_create(&pool_config, &r->pool);
    if (rc != 0) {
      r->pool = NULL;
      fatal(r, "aoi_pool_create", rc);
      return -1;
    }
    r->config.pool = r->pool;
  }
  for (unsigned i = 0; i < r->count; i++) {
    int rc = aoi_create(&r->config, &r->worlds[i]);
    if (rc != 0) {
      r->worlds[i] = NULL;
      destroy_worlds(r);
      fatal_in(r, "aoi_create", i, rc);
      return -1;
    }
  }
  for (unsigned long t = 0; t < r->ticks; t++)
    if (tick_worlds(r) != 0)
      return -1;
  return 0;
}

/* Writes world `index`'s events of the tick to its buffer. 0, or -1 after a
   fatal report. */
static int gather_events(replay *r, unsigned index) {
  aoi_world *world = r->worlds[index];
  buffer *t = &r->buffers[index];
  const uint64_t *watchers;
  size_t watcher_count;
  int rc;

  t->length = 0;
  t->lines = 0;
  rc = aoi_pending(world, &watchers, &watcher_count);
  if (rc != 0) {
    fatal_in(r, "aoi_pending", index, rc);
    return -1;
  }
  for (size_t i = 0; i < watcher_count; i++) {
    const aoi_event *events;
    size_t count;
    rc = aoi_drain(world, watchers[i], &events, &count);
    if (rc != 0) {
      fatal_in(r, "aoi_drain", index, rc);
      return -1;
    }
    for (size_t j = 0; j < count; j++) {
      char line[160];
      int length = trace_format_event(line, sizeof line, watchers[i],
                                      &events[j]);
      /* An event line is at most two ids, a word and two %.9g floats. */
      assert(length > 0 && (size_t)length < sizeof line);
      rc = buffer_append(r, t, line, (size_t)length);
      if (rc != 0)
        return -1;
    }
  }
  return 0;
}

/* The line of `t` that starts at `at`, without its newline, quoted in
   `shown`; "the tick's end" past the end of `t`. Returns its length, or
   -1 past the end. */
static long buffer_line(const buffer *t, size_t at, char *shown,
                        size_t size) {
  if (at >= t->length) {
    snprintf(shown, size, "the tick's end");
    return -1;
  }
  const char *start = t->data + at;
  const char *end = memchr(start, '\n', t->length - at);
  long length = end != NULL ? (long)(end - start) : (long)(t->length - at);
  snprintf(shown, size, "\"%.*s\"", (int)length, start);
  return length;
}

/* 0 when world `index` printed this tick what world 0 did; else reports
   the first line that differs and returns -1. */
static int compare_events(replay *r, unsigned index) {
  const buffer *want = &r->buffers[0], *got = &r->buffers[index];
  char want_shown[160], got_shown[160];
  size_t at = 0;

  if (got->length == want->length &&
      (got->length == 0 || memcmp(got->data, want->data, got->length) == 0))
    return 0;
  /* The tick's own line is output line out_lines + 1. */
  for (unsigned long line = r->out_lines + 2;; line++) {
    long want_length = buffer_line(want, at, want_shown, sizeof want_shown);
    long got_length = buffer_line(got, at, got_shown, sizeof got_shown);
    if (want_length < 0 || want_length != got_length ||
        memcmp(want->data + at, got->data + at, (size_t)want_length) != 0) {
      differs(r, index, "at output line %lu (tick %lu): %s instead of %s",
              line, r->ticks, got_shown, want_shown);
      return -1;
    }
    at += (size_t)want_length + 1;
  }
}

/* A `tick`: ticks the worlds, checks that each printed what the first
   did, and prints that. */
static void print_tick(replay *r) {
  if (tick_worlds(r) != 0)
    return;
  r->ticks++;
  for (unsigned i = 0; i < r->count; i++)
    if (gather_events(r, i) != 0)
      return;
  for (unsigned i = 1; i < r->count; i++)
    if (compare_events(r, i) != 0)
      return;
  fprintf(r->out, "tick %lu\n", r->ticks);
  if (r->buffers[0].length > 0)
    fwrite(r->buffers[0].data, 1, r->buffers[0].length, r->out);
  r->out_lines += 1 + r->buffers[0].lines;
}

/* Applies an entity's line to one world; the call's code. */
static int apply_operation(aoi_world *world, const trace_cmd *cmd) {
  switch (cmd->kind) {
  case TRACE_ADD:
    return aoi_add(world, &(aoi_entity){.id = cmd->id,
                                        .tag = cmd->id,
                                        .x = cmd->x,
                                        .y = cmd->y,
                                        .radius = cmd->radius,
                                        .flags = cmd->flags,
                                        .layers = cmd->layers,
                                        .interest = cmd->interest});
  case TRACE_MOVE:
    return aoi_move(world, cmd->id, cmd->x, cmd->y);
  case TRACE_RADIUS:
    return aoi_set_radius(world, cmd->id, cmd->radius);
  case TRACE_LAYERS:
    return aoi_set_layers(world, cmd->id, cmd->layers, cmd->interest);
  case TRACE_APPEAL:
    return aoi_set_appeal(world, cmd->id, cmd->appeal);
  case TRACE_CAP:
    return aoi_set_cap(world, cmd->id, cmd->cap);
  case TRACE_REMOVE:
    return aoi_remove(world, cmd->id);
  default:
    return 0;
  }
}

/* Applies one line; reports it when it is rejected. */
static void apply_line(replay *r, const char *text, size_t length,
                       unsigned long line) {
  trace_cmd cmd;

  /* A NUL inside the line would hide the rest of it from the parser. */
  if (memchr(text, '\0', length) != NULL || trace_parse_line(text, &cmd) != 0) {
    report(r, line, "syntax");
    return;
  }
  if (cmd.kind == TRACE_NONE)
    return;
  if (trace_is_config(cmd.kind)) {
    if (r->config_locked || trace_apply_config(&r->config, &cmd) != 0) {
      report(r, line, "syntax");
      return;
    }
    /* Still empty: recreate them with the new config when next needed. */
    destroy_worlds(r);
    return;
  }

  if (create_worlds(r) != 0)
    return;
  if (cmd.kind == TRACE_TICK) {
    print_tick(r);
    return;
  }
  int first = 0;
  for (unsigned i = 0; i < r->count; i++) {
    int rc = apply_operation(r->worlds[i], &cmd);
    if (rc != 0 && trace_error_code(rc) == NULL) {
      fatal_in(r, "operation", i, rc);
      return;
    }
    if (i == 0) {
      first = rc;
    } else if (rc != first) {
      differs(r, i, "at trace line %lu: %s instead of %s", line,
              aoi_strerror(rc), aoi_strerror(first));
      return;
    }
  }
  if (first != 0)
    report(r, line, trace_error_code(first));
  else if (cmd.kind == TRACE_ADD)
    r->config_locked = 1;
}

int replay_run(FILE *in, const char *name, FILE *out, FILE *err,
               const replay_options *options) {
  replay r;
  char *text = NULL;
  size_t capacity = 0;
  ssize_t length;
  unsigned long line = 0;

  memset(&r, 0, sizeof r);
  aoi_config_default(&r.config);
  r.config.run = options->run;
  r.config.threads = options->threads;
  r.config.shards = options->shards;
  r.pool_threads = options->threads;
  r.count = options->worlds > 0 ? options->worlds : 1;
  r.many = r.count > 1 || options->run != AOI_RUN_OWN || options->async;
  r.async = options->async;
  r.out = out;
  r.err = err;
  r.worlds = calloc(r.count, sizeof *r.worlds);
  r.results = calloc(r.count, sizeof *r.results);
  r.buffers = calloc(r.count, sizeof *r.buffers);
  if (r.worlds == NULL || r.results == NULL || r.buffers == NULL)
    fatal(&r, "replay", AOI_ENOMEM);
  while (!r.failed && (length = getline(&text, &capacity, in)) >= 0) {
    line++;
    if (length > 0 && text[length - 1] == '\n')
      text[--length] = '\0';
    apply_line(&r, text, (size_t)length, line);
  }
  int read_error = !r.failed && ferror(in);
  free(text);
  if (r.worlds != NULL)
    destroy_worlds(&r);
  int rc = aoi_pool_destroy(r.pool);
  if (rc != 0 && !r.failed)
    fatal(&r, "aoi_pool_destroy", rc);
  if (r.buffers != NULL)
    for (unsigned i = 0; i < r.count; i++)
      free(r.buffers[i].data);
  free(r.buffers);
  free(r.results);
  free(r.worlds);
  if (r.failed)
    return 2;
  if (read_error) {
    fflush(out);
    fprintf(err, "aoi-replay: %s: read error\n", name);
    return 2;
  }
  if (fflush(out) != 0)
    return 2;
  return r.rejected ? 1 : 0;
}
