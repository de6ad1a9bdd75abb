/*
 * gen_trace.c: `gen-trace [--policies] SEED` writes a random trace
 * (docs/trace-format.md) to standard output, the same bytes for the same SEED on
 * every machine.
 *
 * It owns the shape of the random workload that replay-layouts.sh runs at
 * every thread and shard count: random config lines, then about 40 ticks over
 * 50 to 300 entities that walk, teleport (far outside the world too), land
 * exactly on round values (world fractions where shard borders fall, cell
 * borders, a watcher's reach and reach + hysteresis), are removed, re-added
 * in the same tick, change radius and masks, plus a few lines that must be
 * rejected. It keeps its own record of which ids are live so that most lines
 * apply; it does not predict events (the model and the engine do that).
 * Coordinates are mostly multiples of 0.5 and print exactly with %.9g.
 *
 * With --policies the trace is v2: each seed picks some of appeals, caps and
 * move bands (at least one). Move bands: 1 to 8 `move-every` lines (periods
 * 1 to 2^32 - 1), now and then after ticks of the empty world, with bad
 * ones among them (a D not above the last, a ninth, P = 0, ...). Appeals:
 * set at add or later, 0 again, within or above the usual radii,
 * max-radius exactly, and invalid ones; caps: 1, 2, a few, lowered below a
 * view's size, back to 0, 2^32 - 1, and malformed ones. Without the option
 * the trace is v1, the same bytes as before v2 existed: every random draw
 * for the policies happens only with it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTITIES 2048

typedef struct entity {
  uint64_t id;
  double x, y, radius;
  unsigned flags;
  int live;
} entity;

typedef struct generator {
  uint64_t state; /* splitmix64 */
  double min_x, min_y, size; /* where entities mostly live */
  double max_radius;         /* the world's limit (500 unless set) */
  double radius_cap;         /* typical radii stay below this */
  double hysteresis;
  double cell; /* > 0 when shape is cells */
  double step; /* walk unit */
  int target;  /* population to keep around */
  int policies;          /* --policies: a v2 trace */
  int appeals, caps;     /* which policies this seed uses */
  uint64_t next_small_id;
  entity entities[MAX_ENTITIES];
  int count; /* entries used in entities[], live or not */
} generator;

static uint64_t next_random(generator *g) {
  uint64_t z = (g->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. The modulo bias is irrelevant here. */
static uint64_t below(generator *g, uint64_t n) { return next_random(g) % n; }

static int chance(generator *g, unsigned percent) {
  return below(g, 100) < percent;
}

/* A multiple of 0.5 in [low, high]. */
static double half_between(generator *g, double low, double high) {
  int64_t a = (int64_t)(low * 2), b = (int64_t)(high * 2);
  if (b <= a)
    return (double)a / 2;
  return (double)(a + (int64_t)below(g, (uint64_t)(b - a + 1))) / 2;
}

/* A multiple of 0.001 in [low, high]: an arbitrary decimal. */
static double decimal_between(generator *g, double low, double high) {
  int64_t a = (int64_t)(low * 1000), b = (int64_t)(high * 1000);
  if (b <= a)
    return (double)a / 1000;
  return (double)(a + (int64_t)below(g, (uint64_t)(b - a + 1))) / 1000;
}

static unsigned isqrt(unsigned n) {
  unsigned r = 0;
  while ((r + 1) * (r + 1) <= n)
    r++;
  return r;
}

/*
 * Output. Lines are built with single spaces, then now and then written with
 * tabs or runs of blanks and a CRLF ending, which the parser must accept.
 */
static void emit(generator *g, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void emit(generator *g, const char *format, ...) {
  char line[512];
  va_list args;

  va_start(args, format);
  vsnprintf(line, sizeof line, format, args);
  va_end(args);
  if (!chance(g, 4)) {
    puts(line);
    return;
  }
  for (const char *p = line; *p != '\0'; p++) {
    if (*p == ' ') {
      static const char *const blanks[] = {"\t", "  ", " \t", "   "};
      fputs(blanks[below(g, 4)], stdout);
    } else {
      putchar(*p);
    }
  }
  fputs(chance(g, 50) ? "\r\n" : " \n", stdout);
}

static const char *flag_word(unsigned flags) {
  return flags == 1 ? "W" : flags == 2 ? "M" : "WM";
}

static uint32_t small_mask(generator *g) {
  static const uint32_t masks[] = {1, 2, 3, 1, 2, 3, 0, 0xffffffffu};
  return masks[below(g, sizeof masks / sizeof masks[0])];
}

/* A mask as decimal or hex text into `out`. */
static const char *mask_text(generator *g, uint32_t mask, char *out,
                             size_t size) {
  if (chance(g, 50))
    snprintf(out, size, "%" PRIu32, mask);
  else
    snprintf(out, size, chance(g, 80) ? "0x%" PRIx32 : "0X%" PRIX32, mask);
  return out;
}

static entity *find(generator *g, uint64_t id) {
  for (int i = 0; i < g->count; i++)
    if (g->entities[i].id == id)
      return &g->entities[i];
  return NULL;
}

static int live_count(generator *g) {
  int n = 0;
  for (int i = 0; i < g->count; i++)
    n += g->entities[i].live;
  return n;
}

static entity *random_live(generator *g) {
  int n = live_count(g);
  if (n == 0)
    return NULL;
  int k = (int)below(g, (uint64_t)n);
  for (int i = 0; i < g->count; i++)
    if (g->entities[i].live && k-- == 0)
      return &g->entities[i];
  return NULL;
}

static entity *random_watcher(generator *g) {
  for (int tries = 0; tries < 20; tries++) {
    entity *e = random_live(g);
    if (e != NULL && (e->flags & 1u))
      return e;
  }
  return NULL;
}

static uint64_t fresh_id(generator *g) {
  for (;;) {
    uint64_t id;
    unsigned pick = (unsigned)below(g, 100);
    if (pick < 60) {
      g->next_small_id += 1 + below(g, 4);
      id = g->next_small_id;
    } else if (pick < 85) {
      id = below(g, 0xffffffffull) + 1;
    } else if (pick < 95) {
      id = UINT64_MAX - below(g, 1000);
    } else {
      id = next_random(g);
    }
    if (find(g, id) == NULL)
      return id;
  }
}

static double random_radius(generator *g) {
  unsigned pick = (unsigned)below(g, 100);
  if (pick < 5)
    return 0;
  if (pick < 8)
    return g->max_radius;
  if (pick < 80)
    return (double)(int64_t)half_between(g, 1, g->radius_cap);
  if (pick < 95)
    return half_between(g, 0.5, g->radius_cap);
  return decimal_between(g, 0, g->radius_cap);
}

/* A point in the area, near it, far from it or very far. */
static void random_place(generator *g, double *x, double *y) {
  unsigned pick = (unsigned)below(g, 100);
  double s = g->size;
  if (pick < 60) {
    *x = half_between(g, g->min_x, g->min_x + s);
    *y = half_between(g, g->min_y, g->min_y + s);
  } else if (pick < 70) {
    *x = decimal_between(g, g->min_x, g->min_x + s);
    *y = decimal_between(g, g->min_y, g->min_y + s);
  } else if (pick < 85) {
    *x = half_between(g, g->min_x - s, g->min_x + 2 * s);
    *y = half_between(g, g->min_y - s, g->min_y + 2 * s);
  } else if (pick < 97) {
    *x = half_between(g, -1e6, 1e6);
    *y = half_between(g, -1e6, 1e6);
  } else if (pick < 99) {
    *x = (double)(int64_t)half_between(g, -2e9, 2e9);
    *y = (double)(int64_t)half_between(g, -2e9, 2e9);
  } else {
    *x = chance(g, 50) ? 1e30 : -3e37;
    *y = chance(g, 50) ? -1e30 : 2.5e36;
  }
}

/* A value that sits on a border someone may draw: a world fraction (where
   shard borders fall for the shard counts the layouts use), the world's
   edge, a cell border, or zero. */
static double round_value(generator *g, double origin) {
  static const int parts[] = {2, 3, 4, 5, 7, 8, 9, 16};
  unsigned pick = (unsigned)below(g, 100);
  if (pick < 55) {
    int k = parts[below(g, sizeof parts / sizeof parts[0])];
    int i = (int)below(g, (uint64_t)k + 1);
    return origin + g->size * i / k;
  }
  if (pick < 80 && g->cell > 0) {
    int64_t k = (int64_t)below(g, 2 * (uint64_t)(g->size / g->cell) + 5) -
                (int64_t)(g->size / g->cell) / 2;
    double v = (double)k * g->cell;
    return chance(g, 20) ? v - 0.5 : v;
  }
  if (pick < 90)
    return chance(g, 50) ? 0 : -0.5;
  return chance(g, 50) ? origin : origin + g->size;
}

static void emit_add(generator *g, entity *e) {
  char layers[16], interest[16];
  if (chance(g, 55)) {
    emit(g, "add %" PRIu64 " %.9g %.9g %.9g %s", e->id, e->x, e->y, e->radius,
         flag_word(e->flags));
  } else {
    emit(g, "add %" PRIu64 " %.9g %.9g %.9g %s %s %s", e->id, e->x, e->y,
         e->radius, flag_word(e->flags),
         mask_text(g, small_mask(g), layers, sizeof layers),
         mask_text(g, small_mask(g), interest, sizeof interest));
  }
}

/* ---- v2: appeals and caps (only with --policies) ---------------------- */

/* An appeal for `id`: 0 again, within or above the usual radii,
   max-radius exactly, or (rarely) one that is `invalid`. */
static void op_appeal(generator *g, uint64_t id) {
  unsigned pick = (unsigned)below(g, 100);
  double high = g->radius_cap * 3 < g->max_radius ? g->radius_cap * 3
                                                  : g->max_radius;
  if (pick < 20) {
    emit(g, "appeal %" PRIu64 " %s", id, chance(g, 80) ? "0" : "-0");
  } else if (pick < 45) {
    emit(g, "appeal %" PRIu64 " %.9g", id, half_between(g, 0.5, g->radius_cap));
  } else if (pick < 75) {
    emit(g, "appeal %" PRIu64 " %.9g", id,
         half_between(g, g->radius_cap, high));
  } else if (pick < 85) {
    emit(g, "appeal %" PRIu64 " %.9g", id, g->max_radius);
  } else if (pick < 92) {
    emit(g, "appeal %" PRIu64 " %.9g", id, decimal_between(g, 0, high));
  } else {
    static const char *const bad[] = {"-1", "nan", "inf", "-inf", "1e39",
                                      "-0.5"};
    if (chance(g, 40))
      emit(g, "appeal %" PRIu64 " %.9g", id, g->max_radius + 1);
    else
      emit(g, "appeal %" PRIu64 " %s", id, bad[below(g, 6)]);
  }
}

/* A cap for `id`: 1 and 2 often, a few, many, back to 0, the largest, or
   (rarely) a malformed one (`syntax`). */
static void op_cap(generator *g, uint64_t id) {
  unsigned pick = (unsigned)below(g, 100);
  if (pick < 18) {
    emit(g, "cap %" PRIu64 " 0", id);
  } else if (pick < 36) {
    emit(g, "cap %" PRIu64 " 1", id);
  } else if (pick < 52) {
    emit(g, "cap %" PRIu64 " 2", id);
  } else if (pick < 78) {
    emit(g, "cap %" PRIu64 " %u", id, 3 + (unsigned)below(g, 6));
  } else if (pick < 92) {
    emit(g, "cap %" PRIu64 " %u", id, 9 + (unsigned)below(g, 40));
  } else if (pick < 95) {
    emit(g, "cap %" PRIu64 " %s", id, chance(g, 50) ? "4294967295" : "007");
  } else {
    static const char *const bad[] = {"-1", "4294967296", "1.5", "0x10",
                                      "1e3", "+3", "", "2 2"};
    emit(g, "cap %" PRIu64 " %s", id, bad[below(g, 8)]);
  }
}

/* An appeal or a cap, as this seed uses them. */
static void op_policy(generator *g, entity *e) {
  if (g->appeals && (!g->caps || chance(g, 50)))
    op_appeal(g, e->id);
  else if (g->caps)
    op_cap(g, e->id);
}

/* A policy line that must be rejected: on an id that is not live
   (`noent`, even with a bad value: the noent wins over `invalid`), or a
   move-every line after the first add (`syntax`). */
static void op_policy_bad(generator *g, uint64_t dead_id) {
  switch (below(g, 4)) {
  case 0:
    emit(g, "appeal %" PRIu64 " %s", dead_id, chance(g, 50) ? "5" : "nan");
    break;
  case 1:
    emit(g, "cap %" PRIu64 " 3", dead_id);
    break;
  case 2:
    emit(g, "appeal %" PRIu64 " -3", dead_id);
    break;
  default:
    emit(g, "move-every 10 2");
    break;
  }
}

/* Adds entity `id` (fresh, or one whose old self is dead) with random
   properties. */
static void add_entity(generator *g, uint64_t id) {
  entity *e = find(g, id);
  if (e == NULL) {
    if (g->count == MAX_ENTITIES)
      return;
    e = &g->entities[g->count++];
    e->id = id;
  }
  static const unsigned flags[] = {1, 2, 2, 3, 3, 3, 3};
  e->flags = flags[below(g, sizeof flags / sizeof flags[0])];
  random_place(g, &e->x, &e->y);
  if (chance(g, 75)) { /* most entities start in the area */
    e->x = half_between(g, g->min_x, g->min_x + g->size);
    e->y = half_between(g, g->min_y, g->min_y + g->size);
  }
  e->radius = random_radius(g);
  e->live = 1;
  emit_add(g, e);
  if (g->policies && chance(g, 25))
    op_policy(g, e);
}

static void move_to(generator *g, entity *e, double x, double y) {
  e->x = x;
  e->y = y;
  emit(g, "move %" PRIu64 " %.9g %.9g", e->id, x, y);
}

static void op_walk(generator *g, entity *e) {
  double dx = (double)((int64_t)below(g, 7) - 3) * g->step;
  double dy = (double)((int64_t)below(g, 7) - 3) * g->step;
  move_to(g, e, e->x + dx, e->y + dy);
}

static void op_teleport(generator *g, entity *e) {
  double x, y;
  random_place(g, &x, &y);
  move_to(g, e, x, y);
}

/* Lands on a round value, or exactly on a watcher's reach. */
static void op_border(generator *g, entity *e) {
  entity *w = random_watcher(g);
  if (w != NULL && w != e && chance(g, 45)) {
    double reach = w->radius;
    if (g->hysteresis > 0 && chance(g, 40))
      reach += g->hysteresis;
    switch (below(g, 4)) {
    case 0:
      move_to(g, e, w->x + reach, w->y);
      break;
    case 1:
      move_to(g, e, w->x, w->y - reach);
      break;
    case 2: /* a corner: the square's reach, beyond the circle's */
      move_to(g, e, w->x - reach, w->y + reach);
      break;
    default: /* 3-4-5: exactly on the circle when reach is a multiple of 5 */
      move_to(g, e, w->x + reach * 0.6, w->y + reach * 0.8);
      break;
    }
    return;
  }
  double x = chance(g, 70) ? round_value(g, g->min_x) : e->x;
  double y = chance(g, 70) ? round_value(g, g->min_y) : e->y;
  move_to(g, e, x, y);
}

static void op_remove(generator *g, entity *e) {
  e->live = 0;
  emit(g, "remove %" PRIu64, e->id);
}

static void op_add(generator *g) {
  /* Now and then bring back an id that died in an earlier tick. */
  if (chance(g, 20)) {
    for (int tries = 0; tries < 10 && g->count > 0; tries++) {
      entity *e = &g->entities[below(g, (uint64_t)g->count)];
      if (!e->live) {
        add_entity(g, e->id);
        return;
      }
    }
  }
  add_entity(g, fresh_id(g));
}

static void op_respawn(generator *g, entity *e) {
  op_remove(g, e);
  if (chance(g, 30)) { /* same place: only the identity changes */
    e->live = 1;
    emit_add(g, e);
  } else {
    add_entity(g, e->id);
  }
}

static void op_radius(generator *g, entity *e) {
  e->radius = random_radius(g);
  emit(g, "radius %" PRIu64 " %.9g", e->id, e->radius);
}

static void op_layers(generator *g, entity *e) {
  char layers[16], interest[16];
  emit(g, "layers %" PRIu64 " %s %s", e->id,
       mask_text(g, small_mask(g), layers, sizeof layers),
       mask_text(g, small_mask(g), interest, sizeof interest));
}

/* Moves that must leave no `move` event, and removes followed by use. */
static void op_odd(generator *g, entity *e) {
  switch (below(g, 4)) {
  case 0: /* to where it already is */
    move_to(g, e, e->x, e->y);
    break;
  case 1: { /* away and back within the tick */
    double x = e->x, y = e->y;
    op_teleport(g, e);
    move_to(g, e, x, y);
    break;
  }
  case 2: /* removed, then used: noent */
    op_remove(g, e);
    emit(g, "move %" PRIu64 " %.9g %.9g", e->id, e->x, e->y);
    break;
  default: /* removed, re-added, removed again */
    op_remove(g, e);
    add_entity(g, e->id);
    op_remove(g, e);
    break;
  }
}

/* A line the replay must reject, changing nothing. */
static void op_bad(generator *g) {
  entity *e = random_live(g);
  switch (below(g, 10)) {
  case 0:
    emit(g, "move %" PRIu64 " 1 1", (uint64_t)999999999999ull + below(g, 9));
    break;
  case 1:
    emit(g, "add %" PRIu64 " nan 0 1 W", fresh_id(g));
    break;
  case 2:
    emit(g, "add %" PRIu64 " 0 0 %.9g WM", fresh_id(g), g->max_radius + 1);
    break;
  case 3:
    emit(g, "add %" PRIu64 " 0 0 1 %s", fresh_id(g),
         chance(g, 50) ? "X" : "MW");
    break;
  case 4:
    if (e != NULL)
      emit(g, "add %" PRIu64 " 0 0 1 W", e->id);
    break;
  case 5:
    if (e != NULL)
      emit(g, "radius %" PRIu64 " -1", e->id);
    break;
  case 6:
    if (e != NULL)
      emit(g, "move %" PRIu64 " %s 0", e->id, chance(g, 50) ? "inf" : "1e999");
    break;
  case 7:
    if (e != NULL)
      emit(g, "layers %" PRIu64 " 0xZZ 1", e->id);
    break;
  case 8:
    emit(g, "hysteresis 1");
    break;
  default:
    emit(g, "remove %" PRIu64, fresh_id(g));
    break;
  }
}

static void gen_tick(generator *g) {
  int live = live_count(g);
  int ops = live / 2 + (int)below(g, 12);

  if (chance(g, 3))
    ops = 0; /* a tick where nothing changed */
  for (int i = 0; i < ops; i++) {
    if (g->policies && chance(g, 6)) {
      entity *e = random_live(g);
      if (chance(g, 5) || e == NULL)
        op_policy_bad(g, fresh_id(g));
      else
        op_policy(g, e);
      continue;
    }
    unsigned pick = (unsigned)below(g, 100);
    entity *e = random_live(g);
    if (e == NULL || pick >= 96) {
      if (live_count(g) < g->target + 20 || pick >= 96)
        op_add(g);
      continue;
    }
    if (pick < 60)
      op_walk(g, e);
    else if (pick < 64)
      op_teleport(g, e);
    else if (pick < 72)
      op_border(g, e);
    else if (pick < 76) {
      if (live_count(g) > g->target - 20)
        op_remove(g, e);
    } else if (pick < 80)
      op_respawn(g, e);
    else if (pick < 85)
      op_radius(g, e);
    else if (pick < 90)
      op_layers(g, e);
    else if (pick < 94)
      op_odd(g, e);
    else if (pick < 95)
      op_bad(g);
    else
      emit(g, "%s", chance(g, 50) ? "" : "# a comment");
  }
  emit(g, "tick");
}

static void gen_config(generator *g) {
  static const double sizes[] = {64, 100, 200, 500, 1000, 3000};
  g->size = sizes[below(g, sizeof sizes / sizeof sizes[0])];
  /* The area: from the origin, centred on it, or away from it. */
  const double origins[] = {0, 0, -g->size / 2, g->size / 3, 1000, -12345.5};
  g->min_x = origins[below(g, sizeof origins / sizeof origins[0])];
  g->min_y = chance(g, 70) ? g->min_x : origins[below(g, 6)];
  g->target = 50 + (int)below(g, 251);
  g->radius_cap = (double)(int64_t)(g->size * 3.57 / isqrt((unsigned)g->target));
  if (g->radius_cap < 2)
    g->radius_cap = 2;
  g->step = (double)(int64_t)(g->size / 200) / 2;
  if (g->step < 0.5)
    g->step = 0.5;

  int set_max = chance(g, 70) || g->radius_cap > 500;
  g->max_radius = 500;
  if (set_max)
    g->max_radius = chance(g, 50) ? g->radius_cap : g->radius_cap * 2;
  g->hysteresis = 0;
  if (chance(g, 50)) {
    static const double values[] = {0, 0.5, 1, 2.5, 5};
    g->hysteresis = values[below(g, sizeof values / sizeof values[0])];
    if (chance(g, 20))
      g->hysteresis = (double)(int64_t)(g->radius_cap / 10);
  }
  g->cell = 0;
  unsigned shape = (unsigned)below(g, 3);
  if (shape == 2) {
    static const double scale[] = {0.34, 0.5, 1, 1, 1.5};
    g->cell = (double)(int64_t)(g->radius_cap * scale[below(g, 5)]);
    if (g->cell < 1)
      g->cell = chance(g, 50) ? 1 : 0.5;
    if (chance(g, 20))
      g->cell += 0.5;
  }

  /* The config lines in a random order, some left out. */
  int order[6] = {0, 1, 2, 3, 4, 5};
  for (int i = 5; i > 0; i--) {
    int j = (int)below(g, (uint64_t)i + 1);
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int i = 0; i < 6; i++) {
    switch (order[i]) {
    case 0:
      if (chance(g, 85)) {
        double x0 = g->min_x, y0 = g->min_y;
        double x1 = x0 + g->size, y1 = y0 + g->size;
        if (chance(g, 10)) /* reversed corners: a hint all the same */
          emit(g, "world %.9g %.9g %.9g %.9g", x1, y1, x0, y0);
        else
          emit(g, "world %.9g %.9g %.9g %.9g", x0, y0, x1, y1);
      }
      break;
    case 1:
      if (set_max)
        emit(g, "max-radius %.9g", g->max_radius);
      break;
    case 2:
      if (g->hysteresis > 0 || chance(g, 30))
        emit(g, "hysteresis %.9g", g->hysteresis);
      break;
    case 3:
      if (chance(g, 50))
        emit(g, "moves %s", chance(g, 50) ? "on" : "off");
      break;
    case 4:
      if (shape == 0 && chance(g, 50))
        emit(g, "shape circle");
      else if (shape == 1)
        emit(g, "shape square");
      else if (shape == 2)
        emit(g, "shape cells %.9g", g->cell);
      break;
    default:
      if (chance(g, 15)) /* ticks of an empty world, then config again */
        emit(g, "tick");
      break;
    }
  }
}

/* v2: 1 to 8 move-every lines, each D above the last, with bad lines
   among them that must be `syntax` and change nothing. */
static void gen_bands(generator *g) {
  static const char *const periods[] = {"1", "2", "2", "3", "4", "5",
                                        "7", "16", "4294967295"};
  int count = 1 + (int)below(g, 8);
  double d = chance(g, 25) ? 0 : half_between(g, 0.5, g->radius_cap / 2);

  if (chance(g, 20)) /* ticks of the empty world: the rate counts them */
    for (int k = 1 + (int)below(g, 3); k > 0; k--)
      emit(g, "tick");
  for (int i = 0; i < count; i++) {
    if (chance(g, 15)) {
      switch (below(g, 6)) {
      case 0: /* not above the last D */
        if (i > 0)
          emit(g, "move-every %.9g 2", d - (chance(g, 50) ? 0.5 : 0));
        break;
      case 1:
        emit(g, "move-every %.9g 0", d);
        break;
      case 2:
        emit(g, "move-every %.9g 4294967296", d);
        break;
      case 3:
        emit(g, "move-every %s 2", chance(g, 50) ? "-1" : "inf");
        break;
      case 4:
        emit(g, "move-every %.9g", d);
        break;
      default:
        emit(g, "move-every %.9g 2.5", d);
        break;
      }
    }
    emit(g, "move-every %.9g %s", d, periods[below(g, 9)]);
    d += chance(g, 80) ? half_between(g, 0.5, g->radius_cap / 2)
                       : decimal_between(g, 0.001, 2);
  }
  if (count == 8 || chance(g, 5)) /* a ninth, or one too many: syntax */
    emit(g, "move-every %.9g 2", d + 1);
}

int main(int argc, char **argv) {
  static generator g;
  const char *text = argc == 3 ? argv[2] : argc == 2 ? argv[1] : "";
  char *end;

  if (argc == 3 && strcmp(argv[1], "--policies") == 0)
    g.policies = 1;
  else if (argc != 2)
    text = "";
  if (text[0] == '\0') {
    fputs("usage: gen-trace [--policies] SEED\n", stderr);
    return 2;
  }
  unsigned long long seed = strtoull(text, &end, 10);
  if (*end != '\0') {
    fputs("usage: gen-trace [--policies] SEED\n", stderr);
    return 2;
  }
  g.state = (uint64_t)seed;
  next_random(&g);
  if (g.policies)
    printf("# gen-trace --policies %llu\n", seed);
  else
    printf("# gen-trace %llu\n", seed);
  gen_config(&g);
  if (g.policies) {
    g.appeals = chance(&g, 65);
    g.caps = chance(&g, 65);
    int bands = chance(&g, 60) || (!g.appeals && !g.caps);
    if (bands)
      gen_bands(&g);
  }
  int initial = g.target - 10 + (int)below(&g, 21);
  for (int i = 0; i < initial; i++)
    add_entity(&g, fresh_id(&g));
  int ticks = 35 + (int)below(&g, 11);
  for (int t = 0; t < ticks; t++)
    gen_tick(&g);
  return fflush(stdout) == 0 ? 0 : 1;
}
