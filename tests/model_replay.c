/*
 * model-replay: replays a trace (docs/trace-format.md) through the brute-force
 * model instead of the engine, with aoi-replay's command line, output,
 * errors and exit status. The shared traces' expected outputs pass through
 * it unchanged, which shows that the model, the oracle of the differential
 * tests, reads the spec as those outputs do.
 *
 * usage: model-replay [--threads N] [--shards M] FILE|-
 * (--threads and --shards are checked and ignored: the model has neither.)
 *
 * Config lines are accepted until an `add` has succeeded, as in aoi-replay:
 * until then the model is empty, so a config line drops it and the next
 * command creates it again (and ticks it as often as the trace has, so that
 * tick numbers stay those printed). Exit status: 0 when every line applied, 1 when a
 * line was rejected, 2 when the trace could not be read or memory ran out.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "aoi.h"
#include "model.h"
#include "trace.h"

#define USAGE "usage: model-replay [--threads N] [--shards M] FILE|-\n"

typedef struct replay {
  aoi_config config;
  model *m;
  int config_locked;
  unsigned long ticks;
  int rejected;
} replay;

_Noreturn static void usage_exit(void) {
  fputs(USAGE, stderr);
  exit(2);
}

_Noreturn static void out_of_memory(void) {
  fflush(stdout);
  fputs("model-replay: out of memory\n", stderr);
  exit(2);
}

static int is_count(const char *text) {
  size_t length = strlen(text);
  return length > 0 && length <= 10 && strspn(text, "0123456789") == length &&
         strtoul(text, NULL, 10) <= 0xffffffffUL;
}

/* The spec's defaults, written here rather than taken from the engine. */
static void default_config(aoi_config *config) {
  memset(config, 0, sizeof *config);
  config->max_x = 1000;
  config->max_y = 1000;
  config->max_radius = 500;
  config->hysteresis = 0;
  config->move_events = 1;
  config->shape = AOI_SHAPE_CIRCLE;
  config->cell_size = 1;
}

static const char *error_code(int code) {
  switch (code) {
  case AOI_EEXIST:
    return "exists";
  case AOI_ENOENT:
    return "noent";
  case AOI_ENOMEM:
    out_of_memory();
  default:
    return "invalid";
  }
}

static void print_tick(replay *r) {
  const model_event *events;

  if (model_tick(r->m) != 0)
    out_of_memory();
  r->ticks++;
  printf("tick %lu\n", r->ticks);
  size_t count = model_events(r->m, &events);
  for (size_t i = 0; i < count; i++) {
    const aoi_event *e = &events[i].event;
    if (e->kind == AOI_LEAVE)
      printf("%" PRIu64 " leave %" PRIu64 "\n", events[i].watcher, e->id);
    else
      printf("%" PRIu64 " %s %" PRIu64 " %.9g %.9g\n", events[i].watcher,
             e->kind == AOI_ENTER ? "enter" : "move", e->id, (double)e->x,
             (double)e->y);
  }
}

/* Applies one line; returns the error code to report, or NULL. */
static const char *apply_line(replay *r, const char *text, size_t length) {
  trace_cmd cmd;
  int rc = 0;

  if (memchr(text, '\0', length) != NULL || trace_parse_line(text, &cmd) != 0)
    return "syntax";
  if (cmd.kind == TRACE_NONE)
    return NULL;
  if (trace_is_config(cmd.kind)) {
    if (r->config_locked || trace_apply_config(&r->config, &cmd) != 0)
      return "syntax";
    model_destroy(r->m);
    r->m = NULL;
    return NULL;
  }
  if (r->m == NULL) {
    /* Ticked as often as the empty model it replaces, so that its tick
       numbers are the printed ones (move-every's rate depends on them). */
    if ((r->m = model_create(&r->config)) == NULL)
      out_of_memory();
    for (unsigned long t = 0; t < r->ticks; t++)
      if (model_tick(r->m) != 0)
        out_of_memory();
  }
  switch (cmd.kind) {
  case TRACE_ADD:
    rc = model_add(r->m, cmd.id, cmd.x, cmd.y, cmd.radius, cmd.flags,
                   cmd.layers, cmd.interest);
    if (rc == 0)
      r->config_locked = 1;
    break;
  case TRACE_MOVE:
    rc = model_move(r->m, cmd.id, cmd.x, cmd.y);
    break;
  case TRACE_RADIUS:
    rc = model_set_radius(r->m, cmd.id, cmd.radius);
    break;
  case TRACE_LAYERS:
    rc = model_set_layers(r->m, cmd.id, cmd.layers, cmd.interest);
    break;
  case TRACE_APPEAL:
    rc = model_set_appeal(r->m, cmd.id, cmd.appeal);
    break;
  case TRACE_CAP:
    rc = model_set_cap(r->m, cmd.id, cmd.cap);
    break;
  case TRACE_REMOVE:
    rc = model_remove(r->m, cmd.id);
    break;
  case TRACE_TICK:
    print_tick(r);
    break;
  default:
    break;
  }
  return rc != 0 ? error_code(rc) : NULL;
}

int main(int argc, char **argv) {
  replay r;
  const char *path = NULL;

  memset(&r, 0, sizeof r);
  default_config(&r.config);
  for (int i = 1; i < argc; i++) {
    if ((strcmp(argv[i], "--threads") == 0 ||
         strcmp(argv[i], "--shards") == 0) &&
        i + 1 < argc) {
      if (!is_count(argv[++i]))
        usage_exit();
    } else if (path == NULL &&
               (strcmp(argv[i], "-") == 0 || argv[i][0] != '-')) {
      path = argv[i];
    } else {
      usage_exit();
    }
  }
  if (path == NULL)
    usage_exit();

  FILE *in = stdin;
  if (strcmp(path, "-") != 0 && (in = fopen(path, "r")) == NULL) {
    fprintf(stderr, "model-replay: %s: %s\n", path, strerror(errno));
    return 2;
  }
  char *text = NULL;
  size_t capacity = 0;
  ssize_t length;
  unsigned long line = 0;
  while ((length = getline(&text, &capacity, in)) >= 0) {
    line++;
    if (length > 0 && text[length - 1] == '\n')
      text[--length] = '\0';
    const char *code = apply_line(&r, text, (size_t)length);
    if (code != NULL) {
      fprintf(stderr, "error %lu %s\n", line, code);
      r.rejected = 1;
    }
  }
  int read_error = ferror(in);
  free(text);
  if (in != stdin)
    fclose(in);
  model_destroy(r.m);
  if (read_error) {
    fflush(stdout);
    fprintf(stderr, "model-replay: %s: read error\n", path);
    return 2;
  }
  if (fflush(stdout) != 0)
    return 2;
  return r.rejected ? 1 : 0;
}
