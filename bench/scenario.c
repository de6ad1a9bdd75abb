/*
 * scenario.c: the crowds of aoi-bench. Each scenario is two functions over
 * the crowd's slots: `place` sets where everyone starts (and any goals), and
 * `step` emits the operations of one tick. Slot i holds id i + 1 at the
 * start; only churn gives a slot a new id (a logout, later a login).
 *
 * Every random number comes from the crowd's one PRNG, drawn in slot order,
 * so a crowd is a pure function of its parameters. Positions are computed in
 * double and stored as the floats the engine will see; walls reflect, and
 * nothing ever leaves [0, side].
 *
 * The sizes below (how many attractors, towns and armies, how big) are
 * fractions of the world's side, so a scenario looks the same at any scale:
 * only its density relative to `uniform` (about --neighbours per view)
 * changes where the scenario says so. `sparse` changes the radius and the
 * density themselves (its factors in the table), and aoi-bench sizes its
 * world from them: a uniform walk, each entity seeing ten times as far on
 * a map so much wider that about one other is in view.
 *
 * The cliff scenarios are the uniform crowd plus an odd part, which draws
 * from a second PRNG (seeded from the same seed), so that the crowd without
 * it (`plain`) makes the very same operations but the odd part's:
 *  - outlier: one far marker (never a watcher) that never moves, id N + 1,
 *    at --outlier-at (default (3e38, 3e38));
 *  - spectator: one camera, a watcher only, id N + 1, that never moves,
 *    at the centre of the map, whose radius is the world's max_radius;
 *  - mixed-radius: a share of the watchers (--mix, default 1%) picked at
 *    the start, whose radius is a factor (default 10) of everyone's;
 *  - flood: every entity makes --flood moves a tick (default 16): to random
 *    points of the whole map (across every shard border and back), and its
 *    real step last; and 1% of the crowd each tick is removed and added
 *    again under its id (a respawn) in the middle of those moves. Plain, an
 *    entity makes its step alone, and a respawn is a remove and an add at
 *    the new position: only the last position counts, so both give the
 *    same events.
 */
#include "scenario.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Hotspot: three attractors (a capital, a town, a world boss), and the
   share of the crowd each one draws. */
#define HOTSPOT_SITES 3
#define HOTSPOT_DRAWN 0.75  /* share of entities that head for a site */
#define HOTSPOT_RADIUS 0.08 /* a site's radius, times side */

/* Clusters: towns covering this share of the map, one per 2500 entities
   (4 to 64); residents stay in their town, travellers walk the roads. */
#define CLUSTERS_COVER 0.25
#define CLUSTERS_RESIDENTS 0.7

/* Sparse: the uniform walk, but each entity sees SPARSE_RADIUS times as
   far, and the map is so much wider that it has SPARSE_NEIGHBOURS times as
   many in view: a few entities, far apart, on a large map (aoi-bench sizes
   the world from these). */
#define SPARSE_RADIUS 10.0
#define SPARSE_NEIGHBOURS (1.0 / 32)

/* March: eight armies, four marching along x and four along y, each a
   column half the map long and an eighth of it wide. */
#define MARCH_ARMIES 8

typedef struct army {
  int along_y;   /* marches along y (else along x) */
  double lane;   /* the centre of its lane, across the march */
  double centre; /* the centre of the column, along the march */
  double dir;    /* +1 or -1 */
} army;

typedef struct site {
  double x, y, weight;
} site;

struct crowd {
  const scenario *sc;
  crowd_params p;
  bench_rng rng;
  bench_rng odd;         /* the odd part's, apart so that plain is alike */
  uint32_t count;
  double side, step;
  uint64_t *id;
  float *x, *y;
  uint8_t *flags;        /* 0 for an empty slot (churn) */
  float *radius;         /* the view radius each slot's adds carry */
  int32_t *group;        /* site, town or army; -1 for none */
  float *goal_x, *goal_y;
  uint32_t *perm;        /* a permutation of the slots, to pick from */
  uint32_t *stamp;       /* the tick a slot was last singled out */
  uint32_t tick;
  uint32_t *dead;        /* churn: slots logged out, to log in next tick */
  uint32_t dead_count;
  uint32_t *leaving;     /* churn: this tick's logouts and respawns */
  uint64_t next_id;      /* churn: the next new id */
  site *sites;           /* hotspot: attractors; clusters: towns */
  uint32_t site_count;
  double site_radius;
  army armies[MARCH_ARMIES];
  bench_op *ops;
  size_t op_count, op_capacity;
};

/* ---- helpers ------------------------------------------------------------ */

static double clamp_world(const crowd *c, double v)
{
  return v < 0 ? 0 : v > c->side ? c->side : v;
}

/* Keeps a coordinate inside [0, side] by reflecting it off the walls. */
static double reflect(const crowd *c, double v)
{
  if (v < 0)
    v = -v;
  if (v > c->side)
    v = 2 * c->side - v;
  return clamp_world(c, v);
}

static void random_point(crowd *c, float *x, float *y)
{
  *x = (float)(rng_unit(&c->rng) * c->side);
  *y = (float)(rng_unit(&c->rng) * c->side);
}

/* A uniform point of the disc of radius r around (cx, cy), clamped into
   the world. */
static void disc_point(crowd *c, double cx, double cy, double r, float *x,
                       float *y)
{
  double d = r * sqrt(rng_unit(&c->rng));
  double angle = 2 * M_PI * rng_unit(&c->rng);
  *x = (float)clamp_world(c, cx + d * cos(angle));
  *y = (float)clamp_world(c, cy + d * sin(angle));
}

/* Slot i walks `step` in a fresh random direction. */
static void walk(crowd *c, uint32_t i)
{
  double angle = 2 * M_PI * rng_unit(&c->rng);
  c->x[i] = (float)reflect(c, c->x[i] + c->step * cos(angle));
  c->y[i] = (float)reflect(c, c->y[i] + c->step * sin(angle));
}

/* Slot i walks `step` toward (gx, gy), its heading off by up to `jitter`
   radians either way. Returns 1, having landed on the goal, when the goal
   was within one step. */
static int head_to(crowd *c, uint32_t i, double gx, double gy, double jitter)
{
  double dx = gx - c->x[i], dy = gy - c->y[i];
  if (dx * dx + dy * dy <= c->step * c->step) {
    c->x[i] = (float)gx;
    c->y[i] = (float)gy;
    return 1;
  }
  double angle = atan2(dy, dx) + jitter * (2 * rng_unit(&c->rng) - 1);
  c->x[i] = (float)reflect(c, c->x[i] + c->step * cos(angle));
  c->y[i] = (float)reflect(c, c->y[i] + c->step * sin(angle));
  return 0;
}

/* k distinct slots, uniformly at random: the head of a partial
   Fisher-Yates shuffle of `perm`. Borrowed until the next pick. */
static const uint32_t *pick(crowd *c, uint32_t k)
{
  if (k > c->count)
    k = c->count;
  for (uint32_t j = 0; j < k; j++) {
    uint32_t r = j + rng_below(&c->rng, c->count - j);
    uint32_t t = c->perm[j];
    c->perm[j] = c->perm[r];
    c->perm[r] = t;
  }
  return c->perm;
}

static uint8_t random_flags(crowd *c)
{
  return rng_unit(&c->rng) < c->p.players ? AOI_WATCHER | AOI_MARKER
                                          : AOI_MARKER;
}

/* The id of the n-th entity a crowd names (n from 1): n itself, or with
   sparse_ids n times an odd constant, which is one to one over 64-bit
   integers and spreads them as a host's random or composite ids would. */
static uint64_t crowd_id(const crowd *c, uint64_t n)
{
  return c->p.sparse_ids ? n * 0x9e3779b97f4a7c15ull : n;
}

static bench_op *push_op(crowd *c, uint8_t kind, uint32_t i)
{
  if (c->op_count == c->op_capacity) {
    c->op_capacity = c->op_capacity ? 2 * c->op_capacity : 1024;
    c->ops = bench_realloc(c->ops, c->op_capacity, sizeof(*c->ops));
  }
  bench_op *op = &c->ops[c->op_count++];
  op->id = c->id[i];
  op->slot = i;
  op->x = c->x[i];
  op->y = c->y[i];
  op->radius = c->radius[i];
  op->kind = kind;
  op->flags = c->flags[i];
  return op;
}

static void emit_move(crowd *c, uint32_t i)
{
  push_op(c, BENCH_OP_MOVE, i);
}

/* ---- uniform, idle, teleport, sparse ------------------------------------ */

static void place_uniform(crowd *c)
{
  for (uint32_t i = 0; i < c->count; i++)
    random_point(c, &c->x[i], &c->y[i]);
}

static void step_uniform(crowd *c)
{
  for (uint32_t i = 0; i < c->count; i++) {
    walk(c, i);
    emit_move(c, i);
  }
}

/* A random share of the crowd (5% unless --walkers) walks; the rest
   stands still. The share in millionths, so that 5% of n is n / 20
   rounded up, exactly. */
static void step_idle(crowd *c)
{
  uint64_t ppm = (uint64_t)llround(c->p.walk_share * 1e6);
  uint32_t k = (uint32_t)(((uint64_t)c->count * ppm + 999999) / 1000000);
  const uint32_t *chosen = pick(c, k);
  for (uint32_t j = 0; j < k; j++) {
    walk(c, chosen[j]);
    emit_move(c, chosen[j]);
  }
}

/* Everyone walks, but 1% of the crowd (at least one) jumps to a random
   point instead. */
static void step_teleport(crowd *c)
{
  uint32_t k = c->count / 100 ? c->count / 100 : 1;
  const uint32_t *chosen = pick(c, k);
  for (uint32_t j = 0; j < k; j++)
    c->stamp[chosen[j]] = c->tick;
  for (uint32_t i = 0; i < c->count; i++) {
    if (c->stamp[i] == c->tick)
      random_point(c, &c->x[i], &c->y[i]);
    else
      walk(c, i);
    emit_move(c, i);
  }
}

/* ---- hotspot ------------------------------------------------------------ */

static void hotspot_goal(crowd *c, uint32_t i)
{
  const site *s = &c->sites[c->group[i]];
  disc_point(c, s->x, s->y, c->site_radius, &c->goal_x[i], &c->goal_y[i]);
}

/* Three sites; three entities in four are drawn to one (by its weight),
   start somewhere between a random point and their goal in it, and walk
   there; the others wander. */
static void place_hotspot(crowd *c)
{
  static const double weights[HOTSPOT_SITES] = {0.5, 0.3, 0.2};
  c->site_count = HOTSPOT_SITES;
  c->site_radius = HOTSPOT_RADIUS * c->side;
  c->sites = bench_calloc(HOTSPOT_SITES, sizeof(*c->sites));
  for (uint32_t k = 0; k < HOTSPOT_SITES; k++) {
    c->sites[k].x = (0.2 + 0.6 * rng_unit(&c->rng)) * c->side;
    c->sites[k].y = (0.2 + 0.6 * rng_unit(&c->rng)) * c->side;
    c->sites[k].weight = weights[k];
  }
  for (uint32_t i = 0; i < c->count; i++) {
    random_point(c, &c->x[i], &c->y[i]);
    c->group[i] = -1;
    if (rng_unit(&c->rng) >= HOTSPOT_DRAWN)
      continue;
    double u = rng_unit(&c->rng);
    int32_t k = 0;
    while (k + 1 < HOTSPOT_SITES && u >= c->sites[k].weight)
      u -= c->sites[k++].weight;
    c->group[i] = k;
    hotspot_goal(c, i);
    double f = rng_unit(&c->rng);
    c->x[i] = (float)(c->x[i] + f * (c->goal_x[i] - c->x[i]));
    c->y[i] = (float)(c->y[i] + f * (c->goal_y[i] - c->y[i]));
  }
}

/* The drawn walk to their goal; once there, they pick another spot of the
   same site, so the crowd keeps moving and keeps its density. */
static void step_hotspot(crowd *c)
{
  for (uint32_t i = 0; i < c->count; i++) {
    if (c->group[i] < 0)
      walk(c, i);
    else if (head_to(c, i, c->goal_x[i], c->goal_y[i], 0.6))
      hotspot_goal(c, i);
    emit_move(c, i);
  }
}

/* ---- clusters ----------------------------------------------------------- */

/* A traveller's destination: a town other than `from`, and a spot near its
   centre. group = town count + destination. */
static void clusters_route(crowd *c, uint32_t i, uint32_t from)
{
  uint32_t to = from;
  if (c->site_count > 1) {
    to = rng_below(&c->rng, c->site_count - 1);
    if (to >= from)
      to++;
  }
  c->group[i] = (int32_t)(c->site_count + to);
  disc_point(c, c->sites[to].x, c->sites[to].y, c->site_radius / 2,
             &c->goal_x[i], &c->goal_y[i]);
}

/* Towns cover a quarter of the map, about 2.8 times as dense as uniform;
   70% of the crowd lives in one, the rest are travellers somewhere on the
   road between two towns. */
static void place_clusters(crowd *c)
{
  uint32_t towns = c->count / 2500;
  towns = towns < 4 ? 4 : towns > 64 ? 64 : towns;
  c->site_count = towns;
  c->site_radius = c->side * sqrt(CLUSTERS_COVER / (M_PI * towns));
  c->sites = bench_calloc(towns, sizeof(*c->sites));
  /* One town in each of `towns` random blocks of a g x g grid, anywhere
     its disc fits in the block: towns never overlap. */
  uint32_t g = (uint32_t)ceil(sqrt((double)towns));
  double block = c->side / g, room = block - 2 * c->site_radius;
  uint32_t blocks[64]; /* towns <= 64, so g * g <= 64 */
  for (uint32_t k = 0; k < g * g; k++)
    blocks[k] = k;
  for (uint32_t k = 0; k < towns; k++) {
    uint32_t r = k + rng_below(&c->rng, g * g - k);
    uint32_t spot = blocks[r];
    blocks[r] = blocks[k];
    c->sites[k].x = (spot % g) * block + c->site_radius +
                    rng_unit(&c->rng) * room;
    c->sites[k].y = (spot / g) * block + c->site_radius +
                    rng_unit(&c->rng) * room;
    c->sites[k].weight = 1.0 / towns;
  }
  for (uint32_t i = 0; i < c->count; i++) {
    uint32_t town = rng_below(&c->rng, towns);
    const site *s = &c->sites[town];
    if (rng_unit(&c->rng) < CLUSTERS_RESIDENTS) {
      c->group[i] = (int32_t)town;
      disc_point(c, s->x, s->y, c->site_radius, &c->x[i], &c->y[i]);
      continue;
    }
    clusters_route(c, i, town);
    double f = rng_unit(&c->rng);
    c->x[i] = (float)(s->x + f * (c->goal_x[i] - s->x));
    c->y[i] = (float)(s->y + f * (c->goal_y[i] - s->y));
  }
}

/* Residents wander and turn back at their town's edge; travellers walk
   nearly straight to their destination, then set off for another town. */
static void step_clusters(crowd *c)
{
  uint32_t towns = c->site_count;
  for (uint32_t i = 0; i < c->count; i++) {
    uint32_t g = (uint32_t)c->group[i];
    if (g < towns) {
      const site *s = &c->sites[g];
      double dx = c->x[i] - s->x, dy = c->y[i] - s->y;
      if (dx * dx + dy * dy > c->site_radius * c->site_radius)
        head_to(c, i, s->x, s->y, 0.5);
      else
        walk(c, i);
    } else if (head_to(c, i, c->goal_x[i], c->goal_y[i], 0.15)) {
      clusters_route(c, i, g - towns);
    }
    emit_move(c, i);
  }
}

/* ---- march -------------------------------------------------------------- */

/* Eight columns, half the map long and an eighth wide, in four lanes along
   x and four along y; neighbouring lanes march opposite ways and every
   column turns back at the wall, so every border is crossed both ways.
   Where the lanes cross, the columns pass through each other. */
static void place_march(crowd *c)
{
  double length = c->side / 2, width = c->side / 8;
  for (uint32_t k = 0; k < MARCH_ARMIES; k++) {
    army *a = &c->armies[k];
    a->along_y = k >= MARCH_ARMIES / 2;
    a->lane = ((k % (MARCH_ARMIES / 2)) + 0.5) * c->side / (MARCH_ARMIES / 2);
    a->dir = k % 2 ? -1 : 1;
    a->centre = length / 2 + rng_unit(&c->rng) * (c->side - length);
  }
  for (uint32_t i = 0; i < c->count; i++) {
    const army *a = &c->armies[i % MARCH_ARMIES];
    double along = a->centre + (rng_unit(&c->rng) - 0.5) * length;
    double across = a->lane + (rng_unit(&c->rng) - 0.5) * width;
    c->group[i] = (int32_t)(i % MARCH_ARMIES);
    c->x[i] = (float)clamp_world(c, a->along_y ? across : along);
    c->y[i] = (float)clamp_world(c, a->along_y ? along : across);
  }
}

static void step_march(crowd *c)
{
  double half = c->side / 4, width = c->side / 8;
  double shift[MARCH_ARMIES];
  for (uint32_t k = 0; k < MARCH_ARMIES; k++) {
    army *a = &c->armies[k];
    double centre = a->centre + a->dir * c->step;
    if (centre + half > c->side) {
      centre = 2 * (c->side - half) - centre;
      a->dir = -1;
    } else if (centre - half < 0) {
      centre = 2 * half - centre;
      a->dir = 1;
    }
    if (centre < half) /* a step longer than the room to turn */
      centre = half;
    else if (centre > c->side - half)
      centre = c->side - half;
    shift[k] = centre - a->centre;
    a->centre = centre;
  }
  for (uint32_t i = 0; i < c->count; i++) {
    const army *a = &c->armies[c->group[i]];
    double along = a->along_y ? c->y[i] : c->x[i];
    double across = a->along_y ? c->x[i] : c->y[i];
    along = reflect(c, along + shift[c->group[i]]);
    across += (rng_unit(&c->rng) - 0.5) * c->step / 2;
    if (across < a->lane - width / 2)
      across = a->lane - width / 2;
    else if (across > a->lane + width / 2)
      across = a->lane + width / 2;
    across = clamp_world(c, across);
    c->x[i] = (float)(a->along_y ? across : along);
    c->y[i] = (float)(a->along_y ? along : across);
    emit_move(c, i);
  }
}

/* ---- churn -------------------------------------------------------------- */

/* Every tick: the slots logged out last tick log in with new ids at random
   points; everyone else walks; then 0.5% of the crowd logs out and another
   0.5% respawns (removed and added again under the same id, at a random
   point, before the same tick). Each login draws its kind anew (--players),
   a respawn keeps its own. */
static void step_churn(crowd *c)
{
  for (uint32_t j = 0; j < c->dead_count; j++) {
    uint32_t i = c->dead[j];
    c->id[i] = crowd_id(c, c->next_id++);
    c->flags[i] = random_flags(c);
    random_point(c, &c->x[i], &c->y[i]);
    c->stamp[i] = c->tick;
    push_op(c, BENCH_OP_ADD, i);
  }
  c->dead_count = 0;

  uint32_t k = c->count / 200 ? c->count / 200 : 1;
  const uint32_t *chosen = pick(c, 2 * k);
  uint32_t chosen_count = 2 * k < c->count ? 2 * k : c->count;
  uint32_t *leaving = c->leaving, leaving_count = 0;
  for (uint32_t j = 0; j < chosen_count; j++)
    if (c->stamp[chosen[j]] != c->tick) /* not logged in just now */
      leaving[leaving_count++] = chosen[j];

  /* Those leaving walk first too: a move, then a remove, in one tick. */
  for (uint32_t i = 0; i < c->count; i++)
    if (c->stamp[i] != c->tick) {
      walk(c, i);
      emit_move(c, i);
    }
  for (uint32_t j = 0; j < leaving_count; j++) {
    uint32_t i = leaving[j];
    push_op(c, BENCH_OP_REMOVE, i);
    if (j % 2 == 0) { /* log out */
      c->flags[i] = 0;
      c->dead[c->dead_count++] = i;
    } else { /* respawn */
      random_point(c, &c->x[i], &c->y[i]);
      push_op(c, BENCH_OP_ADD, i);
    }
  }
}

/* ---- the cliff scenarios ------------------------------------------------ */

/* Flood: slot i respawns at tick t when (i + t) % FLOOD_RESPAWN == 0. */
#define FLOOD_RESPAWN 100

/* outlier: the far marker, after the crowd's adds. */
static void start_outlier(crowd *c)
{
  bench_op *op = push_op(c, BENCH_OP_ADD, 0);
  op->id = crowd_id(c, (uint64_t)c->count + 1);
  op->slot = c->count;
  op->x = c->p.outlier_x;
  op->y = c->p.outlier_y;
  op->flags = AOI_MARKER;
}

/* spectator: the camera at the centre, after the crowd's adds. */
static void start_spectator(crowd *c)
{
  bench_op *op = push_op(c, BENCH_OP_ADD, 0);
  op->id = crowd_id(c, (uint64_t)c->count + 1);
  op->slot = c->count;
  op->x = op->y = (float)(c->side / 2);
  op->radius = c->p.spectator_radius;
  op->flags = AOI_WATCHER;
}

/* mixed-radius: the uniform crowd, and round(share x watchers) of the
   watchers (at least one when the share is not 0), picked by the odd PRNG,
   see `mix_radius` far. */
static void place_mixed(crowd *c)
{
  place_uniform(c);
  if (c->p.plain)
    return;
  uint32_t *watchers = bench_calloc(c->count, sizeof(*watchers)), n = 0;
  for (uint32_t i = 0; i < c->count; i++)
    if (c->flags[i] & AOI_WATCHER)
      watchers[n++] = i;
  uint32_t k = (uint32_t)llround(c->p.mix_share * n);
  if (k == 0 && c->p.mix_share > 0 && n > 0)
    k = 1;
  for (uint32_t j = 0; j < k; j++) {
    uint32_t r = j + rng_below(&c->odd, n - j);
    uint32_t t = watchers[j];
    watchers[j] = watchers[r];
    watchers[r] = t;
    c->radius[watchers[j]] = c->p.mix_radius;
  }
  free(watchers);
}

/* flood: one of an entity's moves before its step, to a random point of
   the map; or, with BENCH_OP_ADD, its add there after a remove. */
static void flood_hop(crowd *c, uint8_t kind, uint32_t i)
{
  bench_op *op = push_op(c, kind, i);
  op->x = (float)(rng_unit(&c->odd) * c->side);
  op->y = (float)(rng_unit(&c->odd) * c->side);
}

/* Everyone walks as in uniform (the same draws of the crowd's PRNG), the
   step coming last of `flood` moves; a respawning entity is removed and
   added again halfway through them. */
static void step_flood(crowd *c)
{
  unsigned k = c->p.plain || c->p.flood < 1 ? 1 : c->p.flood;
  unsigned half = (k - 1) / 2;
  for (uint32_t i = 0; i < c->count; i++) {
    walk(c, i);
    int respawn = (i + c->tick) % FLOOD_RESPAWN == 0;
    if (k == 1 && respawn) {
      push_op(c, BENCH_OP_REMOVE, i);
      push_op(c, BENCH_OP_ADD, i);
      continue;
    }
    for (unsigned j = 0; j + 1 < k; j++)
      if (respawn && j == half) {
        push_op(c, BENCH_OP_REMOVE, i);
        flood_hop(c, BENCH_OP_ADD, i);
      } else {
        flood_hop(c, BENCH_OP_MOVE, i);
      }
    emit_move(c, i);
  }
}

/* ---- crowd -------------------------------------------------------------- */

/* Everyone inside one square of side --radius at the centre of the map,
   each stepping at random within it: nearly everyone is within everyone's
   radius, the N^2 case a view cap exists for. */
static void crowd_square(const crowd *c, double *x0, double *side)
{
  *side = c->p.radius;
  *x0 = c->p.side / 2 - *side / 2;
}

static double crowd_clamp(const crowd *c, double v)
{
  double x0, side;
  crowd_square(c, &x0, &side);
  return v < x0 ? 2 * x0 - v : v > x0 + side ? 2 * (x0 + side) - v : v;
}

static void place_crowd(crowd *c)
{
  double x0, side;
  crowd_square(c, &x0, &side);
  for (uint32_t i = 0; i < c->count; i++) {
    c->x[i] = (float)(x0 + side * rng_unit(&c->rng));
    c->y[i] = (float)(x0 + side * rng_unit(&c->rng));
  }
}

static void step_crowd(crowd *c)
{
  for (uint32_t i = 0; i < c->count; i++) {
    double angle = 2 * M_PI * rng_unit(&c->rng);
    c->x[i] = (float)crowd_clamp(c, c->x[i] + c->step * cos(angle));
    c->y[i] = (float)crowd_clamp(c, c->y[i] + c->step * sin(angle));
    emit_move(c, i);
  }
}

/* ---- the table ---------------------------------------------------------- */

typedef struct scenario_impl {
  void (*place)(crowd *c);
  void (*step)(crowd *c);
  void (*start)(crowd *c); /* the odd entity's add, or NULL */
} scenario_impl;

const scenario bench_scenarios[] = {
    {"uniform", "random walk: every entity walks every tick",
     BENCH_ODD_NONE, 1, 1},
    {"hotspot", "the crowd converges on three attractors", BENCH_ODD_NONE, 1,
     1},
    {"clusters", "dense towns, and travellers on the roads between them",
     BENCH_ODD_NONE, 1, 1},
    {"march", "eight armies march across the map and back", BENCH_ODD_NONE,
     1, 1},
    {"teleport", "random walk, and 1% of the crowd teleports every tick",
     BENCH_ODD_NONE, 1, 1},
    {"churn",
     "random walk, 0.5% logouts, 0.5% logins, 0.5% respawns a tick",
     BENCH_ODD_NONE, 1, 1},
    {"idle",
     "a random 5% of the crowd (--walkers) walks each tick, the rest stands",
     BENCH_ODD_NONE, 1, 1},
    {"sparse",
     "a thin crowd on a wide map: 10x the radius, 1/32 the neighbours",
     BENCH_ODD_NONE, SPARSE_RADIUS, SPARSE_NEIGHBOURS},
    {"crowd",
     "everyone inside one square of side --radius, stepping in place (the"
     " N^2 case: see --cap)",
     BENCH_ODD_NONE, 1, 1},
    {"outlier", "uniform, and one marker far away (--outlier-at)",
     BENCH_ODD_OUTLIER, 1, 1},
    {"spectator",
     "uniform, and one watcher of radius max_radius at the centre",
     BENCH_ODD_SPECTATOR, 1, 1},
    {"mixed-radius", "uniform, and a share of the watchers sees farther"
                     " (--mix)",
     BENCH_ODD_MIXED, 1, 1},
    {"flood", "uniform, but --flood moves per entity a tick, and 1% respawns",
     BENCH_ODD_FLOOD, 1, 1},
};
const size_t bench_scenario_count =
    sizeof(bench_scenarios) / sizeof(bench_scenarios[0]);

/* In the order of bench_scenarios. */
static const scenario_impl impls[] = {
    {place_uniform, step_uniform, NULL},
    {place_hotspot, step_hotspot, NULL},
    {place_clusters, step_clusters, NULL},
    {place_march, step_march, NULL},
    {place_uniform, step_teleport, NULL},
    {place_uniform, step_churn, NULL},
    {place_uniform, step_idle, NULL},
    {place_uniform, step_uniform, NULL},
    {place_crowd, step_crowd, NULL},
    {place_uniform, step_uniform, start_outlier},
    {place_uniform, step_uniform, start_spectator},
    {place_mixed, step_uniform, NULL},
    {place_uniform, step_flood, NULL},
};

const scenario *scenario_find(const char *name)
{
  for (size_t i = 0; i < bench_scenario_count; i++)
    if (strcmp(bench_scenarios[i].name, name) == 0)
      return &bench_scenarios[i];
  return NULL;
}

static const scenario_impl *impl_of(const crowd *c)
{
  return &impls[c->sc - bench_scenarios];
}

crowd *crowd_create(const scenario *sc, const crowd_params *params)
{
  crowd *c = bench_calloc(1, sizeof(*c));
  uint32_t n = params->entities;
  c->sc = sc;
  c->p = *params;
  c->rng.state = params->seed;
  c->odd.state = params->seed ^ UINT64_C(0x6a09e667f3bcc909);
  c->count = n;
  c->side = params->side;
  c->step = params->step;
  c->id = bench_calloc(n, sizeof(*c->id));
  c->x = bench_calloc(n, sizeof(*c->x));
  c->y = bench_calloc(n, sizeof(*c->y));
  c->flags = bench_calloc(n, sizeof(*c->flags));
  c->radius = bench_calloc(n, sizeof(*c->radius));
  c->group = bench_calloc(n, sizeof(*c->group));
  c->goal_x = bench_calloc(n, sizeof(*c->goal_x));
  c->goal_y = bench_calloc(n, sizeof(*c->goal_y));
  c->perm = bench_calloc(n, sizeof(*c->perm));
  c->stamp = bench_calloc(n, sizeof(*c->stamp));
  c->dead = bench_calloc(n, sizeof(*c->dead));
  c->leaving = bench_calloc(n, sizeof(*c->leaving));
  for (uint32_t i = 0; i < n; i++) {
    c->id[i] = crowd_id(c, (uint64_t)i + 1);
    c->perm[i] = i;
    c->flags[i] = random_flags(c);
    c->radius[i] = params->radius;
  }
  c->next_id = (uint64_t)n + 1;
  impl_of(c)->place(c);
  return c;
}

void crowd_destroy(crowd *c)
{
  if (c == NULL)
    return;
  free(c->id);
  free(c->x);
  free(c->y);
  free(c->flags);
  free(c->radius);
  free(c->group);
  free(c->goal_x);
  free(c->goal_y);
  free(c->perm);
  free(c->stamp);
  free(c->dead);
  free(c->leaving);
  free(c->sites);
  free(c->ops);
  free(c);
}

const bench_op *crowd_start(crowd *c, size_t *count)
{
  c->op_count = 0;
  for (uint32_t i = 0; i < c->count; i++)
    push_op(c, BENCH_OP_ADD, i);
  if (impl_of(c)->start != NULL && !c->p.plain)
    impl_of(c)->start(c);
  *count = c->op_count;
  return c->ops;
}

const bench_op *crowd_next(crowd *c, size_t *count)
{
  c->op_count = 0;
  c->tick++;
  impl_of(c)->step(c);
  *count = c->op_count;
  return c->ops;
}
