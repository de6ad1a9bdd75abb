/*
 * replay.c: applies a trace (docs/trace-format.md) to one world through the
 * public API and prints, after every `tick`, the events of every watcher.
 *
 * It owns only the glue between trace.c and aoi.h: the config the trace's
 * config lines build, the lazy creation of the world on the first command
 * that is not a config line, the mapping of API error codes to the trace's
 * error codes, and the output format. Config lines are accepted until an
 * `add` has succeeded: before that the world is still empty, so a config
 * line destroys it and the next command creates it again with the new
 * config, and ticks it as often as the empty one was ticked so that tick
 * numbers stay those printed. A rejected line changes nothing, so a failed
 * `add` does not lock the config.
 *
 * A failure that a trace cannot cause (aoi_create refused, a tick, pending
 * list or drain failed, an operation returned AOI_ENOMEM or AOI_ESYS) stops
 * the replay: the lines after it are not read, and replay_run frees what it
 * holds and returns 2. It never exits the process, so that a fuzz target can
 * call it in a loop.
 */
#define _POSIX_C_SOURCE 200809L

#include "replay.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "aoi.h"
#include "trace.h"

typedef struct replay {
  aoi_config config;
  aoi_world *world;
  FILE *out, *err;
  int config_locked; /* an add has succeeded: config lines are syntax */
  unsigned long ticks;
  int rejected;
  int failed; /* a fatal error was reported: stop */
} replay;

/* Reports a failure that stops the replay. */
static void fatal(replay *r, const char *what, int code) {
  fflush(r->out);
  fprintf(r->err, "aoi-replay: %s: %s\n", what, aoi_strerror(code));
  r->failed = 1;
}

static void report(replay *r, unsigned long line, const char *code) {
  fprintf(r->err, "error %lu %s\n", line, code);
  r->rejected = 1;
}

/* The trace code of an API error; NULL (after a fatal report) for the
   errors a trace cannot cause. */
static const char *error_code(replay *r, int code) {
  switch (code) {
  case AOI_EEXIST:
    return "exists";
  case AOI_ENOENT:
    return "noent";
  case AOI_ECOORD:
  case AOI_ERADIUS:
  case AOI_EFLAGS:
  case AOI_EINVAL:
    return "invalid";
  default:
    fatal(r, "operation", code);
    return NULL;
  }
}

/* Applies a config line to the config; -1 (a `syntax` error, nothing
   changed) for a move-every line that does not fit those before it. */
static int apply_config(replay *r, const trace_cmd *cmd) {
  aoi_config *config = &r->config;

  switch (cmd->kind) {
  case TRACE_WORLD: {
    float x0 = (float)cmd->v[0], y0 = (float)cmd->v[1];
    float x1 = (float)cmd->v[2], y1 = (float)cmd->v[3];
    config->min_x = x0 < x1 ? x0 : x1;
    config->max_x = x0 < x1 ? x1 : x0;
    config->min_y = y0 < y1 ? y0 : y1;
    config->max_y = y0 < y1 ? y1 : y0;
    break;
  }
  case TRACE_MAX_RADIUS:
    config->max_radius = (float)cmd->v[0];
    break;
  case TRACE_HYSTERESIS:
    config->hysteresis = (float)cmd->v[0];
    break;
  case TRACE_MOVES:
    config->move_events = cmd->moves;
    break;
  case TRACE_SHAPE:
    config->shape = cmd->shape;
    if (cmd->shape == AOI_SHAPE_CELLS)
      config->cell_size = (float)cmd->v[0];
    break;
  case TRACE_MOVE_EVERY:
    return trace_add_move_band(config, cmd);
  default:
    break;
  }
  return 0;
}

/* The world, created on first use; NULL after a fatal report. A world
   created again after ticks of an empty one is ticked as often, so that its
   tick numbers are the printed ones (move-every's rate depends on them). */
static aoi_world *world_of(replay *r) {
  if (r->world == NULL) {
    int rc = aoi_create(&r->config, &r->world);
    if (rc != 0) {
      r->world = NULL;
      fatal(r, "aoi_create", rc);
      return NULL;
    }
    for (unsigned long t = 0; t < r->ticks && rc == 0; t++)
      rc = aoi_tick(r->world);
    if (rc != 0) {
      fatal(r, "aoi_tick", rc);
      return NULL;
    }
  }
  return r->world;
}

static void print_events(replay *r) {
  const uint64_t *watchers;
  size_t watcher_count;
  int rc;

  rc = aoi_tick(r->world);
  if (rc != 0) {
    fatal(r, "aoi_tick", rc);
    return;
  }
  r->ticks++;
  fprintf(r->out, "tick %lu\n", r->ticks);
  rc = aoi_pending(r->world, &watchers, &watcher_count);
  if (rc != 0) {
    fatal(r, "aoi_pending", rc);
    return;
  }
  for (size_t i = 0; i < watcher_count; i++) {
    const aoi_event *events;
    size_t count;
    rc = aoi_drain(r->world, watchers[i], &events, &count);
    if (rc != 0) {
      fatal(r, "aoi_drain", rc);
      return;
    }
    for (size_t j = 0; j < count; j++) {
      const aoi_event *e = &events[j];
      switch (e->kind) {
      case AOI_LEAVE:
        fprintf(r->out, "%" PRIu64 " leave %" PRIu64 "\n", watchers[i], e->id);
        break;
      case AOI_ENTER:
        fprintf(r->out, "%" PRIu64 " enter %" PRIu64 " %.9g %.9g\n",
                watchers[i], e->id, (double)e->x, (double)e->y);
        break;
      default:
        fprintf(r->out, "%" PRIu64 " move %" PRIu64 " %.9g %.9g\n",
                watchers[i], e->id, (double)e->x, (double)e->y);
        break;
      }
    }
  }
}

/* Applies one line; reports it when it is rejected. */
static void apply_line(replay *r, const char *text, size_t length,
                       unsigned long line) {
  trace_cmd cmd;
  int rc = 0;

  /* A NUL inside the line would hide the rest of it from the parser. */
  if (memchr(text, '\0', length) != NULL || trace_parse_line(text, &cmd) != 0) {
    report(r, line, "syntax");
    return;
  }
  if (cmd.kind == TRACE_NONE)
    return;
  if (trace_is_config(cmd.kind)) {
    if (r->config_locked || apply_config(r, &cmd) != 0) {
      report(r, line, "syntax");
      return;
    }
    /* Still empty: recreate it with the new config when next needed. */
    aoi_destroy(r->world);
    r->world = NULL;
    return;
  }

  aoi_world *world = world_of(r);
  if (world == NULL)
    return;
  switch (cmd.kind) {
  case TRACE_ADD:
    rc = aoi_add(world, &(aoi_entity){.id = cmd.id,
                                      .tag = cmd.id,
                                      .x = cmd.x,
                                      .y = cmd.y,
                                      .radius = cmd.radius,
                                      .flags = cmd.flags,
                                      .layers = cmd.layers,
                                      .interest = cmd.interest});
    if (rc == 0)
      r->config_locked = 1;
    break;
  case TRACE_MOVE:
    rc = aoi_move(world, cmd.id, cmd.x, cmd.y);
    break;
  case TRACE_RADIUS:
    rc = aoi_set_radius(world, cmd.id, cmd.radius);
    break;
  case TRACE_LAYERS:
    rc = aoi_set_layers(world, cmd.id, cmd.layers, cmd.interest);
    break;
  case TRACE_APPEAL:
    rc = aoi_set_appeal(world, cmd.id, cmd.appeal);
    break;
  case TRACE_CAP:
    rc = aoi_set_cap(world, cmd.id, cmd.cap);
    break;
  case TRACE_REMOVE:
    rc = aoi_remove(world, cmd.id);
    break;
  case TRACE_TICK:
    print_events(r);
    break;
  default:
    break;
  }
  if (rc != 0) {
    const char *code = error_code(r, rc);
    if (code != NULL)
      report(r, line, code);
  }
}

int replay_run(FILE *in, const char *name, FILE *out, FILE *err,
               unsigned threads, unsigned shards) {
  replay r;
  char *text = NULL;
  size_t capacity = 0;
  ssize_t length;
  unsigned long line = 0;

  memset(&r, 0, sizeof r);
  aoi_config_default(&r.config);
  r.config.threads = threads;
  r.config.shards = shards;
  r.out = out;
  r.err = err;
  while (!r.failed && (length = getline(&text, &capacity, in)) >= 0) {
    line++;
    if (length > 0 && text[length - 1] == '\n')
      text[--length] = '\0';
    apply_line(&r, text, (size_t)length, line);
  }
  int read_error = !r.failed && ferror(in);
  free(text);
  aoi_destroy(r.world);
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
