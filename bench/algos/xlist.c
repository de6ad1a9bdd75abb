/*
 * xlist.c: the cross-linked list AOI, as KBEngine and BigWorld build it:
 * two sorted lists, one along x and one along y, each holding every
 * entity's node sorted by its coordinate, and for every watcher two trigger
 * nodes on each list at the edges of its reach box (radius + hysteresis
 * either way; for `cells C`, the edges of the cells it sees). Whatever
 * moves is walked to its new place along each list, node by node, as an
 * insertion sort would; the nodes it passes are the only ones whose order
 * with it changed.
 *
 * The lists are arrays, not linked lists: a walk shifts each node it
 * passes one place back, reading and writing memory in order, where
 * following links missed the cache at every node (sweep-and-prune keeps
 * its axes so). A node is one 64-bit number, its key, its role and its
 * slot (item_of), whose order as numbers is the lists' order; a walk finds
 * its node by binary search, so no node's place is stored anywhere, and
 * shifting one costs no write elsewhere. Keys are floats (a watcher's
 * edges rounded outward, so its box still holds all it may see), turned
 * into unsigned numbers of the same order (key_of).
 *
 * Box membership. Each watcher keeps the markers inside its box, and each
 * marker the watchers whose box holds it (one pair, two entries, each
 * knowing the other's place, so a pair is dropped in O(1) once found).
 * A marker is inside a box when, on both lists, it lies between the low and
 * the high trigger; at equal keys a low trigger sorts before an entity and
 * an entity before a high trigger, so the box's bounds are included, and
 * that order is the same as comparing keys with <=. When a node walks, a
 * pair's membership can change only if the walk passed the other's node;
 * so each partner passed is tested before and after (on the keys, the box
 * being a pure function of them) and the pair added or dropped.
 *
 * Events. The box only finds candidates; the view is the spec's test on
 * them (algo_within), exact for every shape. A watcher that moved is
 * computed whole at the tick, from its box. A marker that leaves a box, or
 * is removed, notes itself at once to the watchers whose box held it; one
 * that moved notes itself at the tick to every watcher whose box holds it
 * then (so a marker that moves sixteen times a tick notes once, and a
 * watcher that moved, computed whole anyway, is not told: events come out
 * at the tick). Those watchers look only at the markers noted to them
 * (algo_diff_notes). A marker a watcher holds is within its reach, so
 * inside its box: none of its changes goes unnoted.
 *
 * Adds, removals and jumps. Inserting a node into an array, or taking one
 * out, shifts all the nodes after it. So an add only records the entity; a
 * removal leaves its nodes in the arrays as ghosts (their slot is no
 * longer in the lists, which walks skip); and a move farther than a few
 * reaches on an axis (a jump: a teleport, a respawn point) leaves the lists
 * as a removal does and comes back as an add, where a walk would pass a
 * good part of the map. The tick drops the ghosts and merges every new
 * node into the arrays in one sorted pass, then sweeps the x array once
 * with the boxes open at each point (those whose low trigger is behind and
 * high trigger ahead) to find the new pairs.
 */
#include "algo_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* A slot's three nodes on each list, whose roles are also their order at
   equal keys: a watcher's low trigger, the entity itself (markers only),
   a watcher's high trigger. */
enum { ROLE_LOW = 0, ROLE_MID = 1, ROLE_HIGH = 2 };

/* A node: key << 32 | role << SLOT_BITS | slot. */
typedef uint64_t xl_item;
#define SLOT_BITS 30
#define SLOT_MASK ((UINT32_C(1) << SLOT_BITS) - 1)

typedef struct xl_axis {
  xl_item *items; /* sorted */
  size_t count, capacity;
} xl_axis;

/* One side of a (watcher, marker) pair: the other's slot, and the place of
   the other side in the other's array. */
typedef struct xl_pair {
  uint32_t other, back;
} xl_pair;

/* A slot's pairs on one side: INBOX, a watcher's (the markers its box
   holds); BOXED, a marker's (the watchers whose box holds it). */
enum { INBOX = 0, BOXED = 1 };

typedef struct xl_pairs {
  xl_pair *items;
  uint32_t count, capacity;
} xl_pairs;

enum { XL_OUT = 0, XL_NEW, XL_IN }; /* a slot's nodes: not in the lists,
                                       waiting for the tick, linked */

typedef struct xl_slot {
  xl_pairs side[2]; /* [INBOX], [BOXED] */
  uint32_t placed;  /* the tick its nodes were linked at */
  uint32_t active;  /* the sweep: its place in an open-box list */
  uint8_t state;
  uint8_t moving; /* a marker that moved since the last tick (listed) */
} xl_slot;

/* What a walk reads of each partner it passes, in one line a slot. */
typedef struct xl_place {
  uint32_t key[2]; /* a marker's: its node's keys on x and y */
  uint32_t box[4]; /* a watcher's: its triggers' keys, x0 y0 x1 y1 */
  uint32_t stamp;  /* the walk that last met it; 0 when its nodes are not
                      in the lists */
  uint32_t pad; /* 32 bytes: two to a cache line */
} xl_place;

/* A box open at the sweep's point: its y keys, read in the inner loop. */
typedef struct xl_open {
  uint32_t y0, y1;
  uint32_t slot;
} xl_open;

typedef struct xlist {
  algo base;
  xl_axis axis[2]; /* x, y */
  double jump; /* a move farther than this on an axis leaves and comes back */
  xl_slot *slots;
  xl_place *places; /* per slot */
  size_t slot_capacity;
  uint32_t stamp;
  int ghosts; /* the arrays hold nodes of slots that left */
  uint32_t *met; /* the partners a walk passed */
  size_t met_count, met_capacity;
  uint32_t *fresh; /* added (or jumped) since the last tick */
  size_t fresh_count, fresh_capacity;
  uint32_t *moving; /* markers that moved since the last tick */
  size_t moving_count, moving_capacity;
  xl_item *merged; /* the tick's merge */
  size_t merged_capacity;
  xl_open *open[2]; /* the sweep's open boxes: [0] old, [1] new */
  size_t open_count[2], open_capacity[2];
  algo_dirty dirty;
} xlist;

/* ---- keys and nodes ----------------------------------------------------- */

/* An unsigned number in the order of the floats (-0 as +0). */
static uint32_t key_of(float f)
{
  uint32_t bits;
  if (f == 0)
    f = 0;
  memcpy(&bits, &f, sizeof(bits));
  return bits & UINT32_C(0x80000000) ? ~bits : bits | UINT32_C(0x80000000);
}

/* The key of the largest float at or below v, and of the smallest at or
   above it. */
static uint32_t key_below(double v)
{
  float f = (float)v;
  if ((double)f > v)
    f = nextafterf(f, -INFINITY);
  return key_of(f);
}

static uint32_t key_above(double v)
{
  float f = (float)v;
  if ((double)f < v)
    f = nextafterf(f, INFINITY);
  return key_of(f);
}

static xl_item item_of(uint32_t key, unsigned role, uint32_t slot)
{
  return (uint64_t)key << 32 | (uint64_t)role << SLOT_BITS | slot;
}

static uint32_t item_slot(xl_item item)
{
  return (uint32_t)item & SLOT_MASK;
}

static unsigned item_role(xl_item item)
{
  return (unsigned)((uint32_t)item >> SLOT_BITS);
}

/* Watcher w's box on the lists, from its position and keep reach. */
static void box_of(const xlist *xl, uint32_t w, uint32_t box[4])
{
  const algo_entity *e = &xl->base.entities[w];
  algo_box b;
  algo_reach_box(&xl->base, e->x, e->y, algo_keep_reach(&xl->base, e), &b);
  box[0] = key_below(b.x0);
  box[1] = key_below(b.y0);
  box[2] = key_above(b.x1);
  box[3] = key_above(b.y1);
}

/* Whether a box holds the node with keys (x, y). */
static int boxed(const uint32_t box[4], uint32_t x, uint32_t y)
{
  return box[0] <= x && x <= box[2] && box[1] <= y && y <= box[3];
}

/* ---- walks -------------------------------------------------------------- */

/* The place of `item` in the axis, which holds it. */
static size_t find(const xl_axis *ax, xl_item item)
{
  size_t lo = 0, hi = ax->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ax->items[mid] < item)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == ax->count || ax->items[lo] != item)
    bench_die("xlist: a node is missing from its list");
  return lo;
}

/* Starts the walks of slot `self`'s nodes: none has met anything yet, and
   the slot does not meet itself. */
static void begin_walks(xlist *xl, uint32_t self)
{
  if (++xl->stamp == 0) { /* wrapped: every stamp of a slot in the lists
                             back to 1 */
    for (size_t s = 0; s < xl->base.entity_count; s++)
      if (xl->places[s].stamp != 0)
        xl->places[s].stamp = 1;
    xl->stamp = 2;
  }
  xl->met_count = 0;
  xl->places[self].stamp = xl->stamp;
}

/* A walk passed a partner (a trigger for an entity node, an entity node
   for a trigger) of slot `owner`: keeps it when it is in the lists and was
   not met yet. */
static void meet(xlist *xl, uint32_t owner)
{
  uint32_t stamp = xl->places[owner].stamp;
  if (stamp == 0 || stamp == xl->stamp)
    return; /* a ghost, or met already */
  xl->places[owner].stamp = xl->stamp;
  ALGO_RESERVE(&xl->base, xl->met, xl->met_capacity, xl->met_count + 1);
  xl->met[xl->met_count++] = owner;
}

/* Moves node `from` of an axis to its place as `to` (the same node with a
   new key), shifting the nodes it passes one place back. */
static void walk(xlist *xl, xl_axis *ax, xl_item from, xl_item to)
{
  xl_item *items = ax->items;
  size_t i = find(ax, from);
  int mid = item_role(from) == ROLE_MID;
  if (to > from) {
    for (; i + 1 < ax->count && items[i + 1] < to; i++) {
      xl_item passed = items[i] = items[i + 1];
      if ((item_role(passed) == ROLE_MID) != mid)
        meet(xl, item_slot(passed));
    }
  } else {
    for (; i > 0 && items[i - 1] > to; i--) {
      xl_item passed = items[i] = items[i - 1];
      if ((item_role(passed) == ROLE_MID) != mid)
        meet(xl, item_slot(passed));
    }
  }
  items[i] = to;
}

/* ---- pairs ------------------------------------------------------------- */

static void add_pair(xlist *xl, uint32_t w, uint32_t m)
{
  xl_pairs *in = &xl->slots[w].side[INBOX], *by = &xl->slots[m].side[BOXED];
  ALGO_RESERVE32(&xl->base, in->items, in->capacity, in->count + 1);
  ALGO_RESERVE32(&xl->base, by->items, by->capacity, by->count + 1);
  in->items[in->count] = (xl_pair){m, by->count};
  by->items[by->count] = (xl_pair){w, in->count};
  in->count++;
  by->count++;
}

/* Drops entry i of slot s's side `which`: the last entry takes its place,
   and that entry's other side learns it. */
static void cut(xlist *xl, uint32_t s, int which, uint32_t i)
{
  xl_pairs *list = &xl->slots[s].side[which];
  uint32_t last = --list->count;
  if (i == last)
    return;
  xl_pair moved = list->items[i] = list->items[last];
  xl->slots[moved.other].side[!which].items[moved.back].back = i;
}

/* Drops the pair (w, m), found from the shorter of its two sides. */
static void drop_pair(xlist *xl, uint32_t w, uint32_t m)
{
  const xl_pairs *in = &xl->slots[w].side[INBOX];
  const xl_pairs *by = &xl->slots[m].side[BOXED];
  uint32_t i = 0;
  if (in->count <= by->count) {
    while (in->items[i].other != m)
      i++;
  } else {
    uint32_t j = 0;
    while (by->items[j].other != w)
      j++;
    i = by->items[j].back;
  }
  uint32_t j = in->items[i].back;
  cut(xl, w, INBOX, i);
  cut(xl, m, BOXED, j);
}

/* ---- operations --------------------------------------------------------- */

static algo *xlist_create(const algo_params *params)
{
  xlist *xl = algo_new(&algo_xlist, params->config, sizeof(*xl));
  /* Past this, walking a node there costs more than the sweep's share of
     taking it out and in again. */
  xl->jump = 4 * (params->radius + xl->base.hysteresis);
  xl->stamp = 1;
  return &xl->base;
}

static void xlist_destroy(algo *a)
{
  xlist *xl = (xlist *)a;
  for (size_t s = 0; s < xl->slot_capacity; s++) {
    free(xl->slots[s].side[INBOX].items);
    free(xl->slots[s].side[BOXED].items);
  }
  free(xl->slots);
  free(xl->places);
  free(xl->axis[0].items);
  free(xl->axis[1].items);
  free(xl->merged);
  free(xl->met);
  free(xl->fresh);
  free(xl->moving);
  free(xl->open[0]);
  free(xl->open[1]);
  algo_dirty_free(&xl->dirty);
  algo_delete(a);
}

/* Makes room for every slot the core has. */
static void reserve_slots(xlist *xl)
{
  algo *a = &xl->base;
  size_t old = xl->slot_capacity, cap = a->entity_capacity;
  if (cap <= old)
    return;
  xl->slots = algo_resize(a, xl->slots, old * sizeof(*xl->slots),
                          cap * sizeof(*xl->slots));
  memset(xl->slots + old, 0, (cap - old) * sizeof(*xl->slots));
  xl->places = algo_resize(a, xl->places, old * sizeof(*xl->places),
                           cap * sizeof(*xl->places));
  memset(xl->places + old, 0, (cap - old) * sizeof(*xl->places));
  xl->slot_capacity = cap;
  algo_dirty_reserve(a, &xl->dirty);
}

/* Slot `slot` waits for the tick to be linked (an add, or a jump). */
static void wait_for_tick(xlist *xl, uint32_t slot)
{
  xl->slots[slot].state = XL_NEW;
  ALGO_RESERVE(&xl->base, xl->fresh, xl->fresh_capacity,
               xl->fresh_count + 1);
  xl->fresh[xl->fresh_count++] = slot;
  if (xl->base.entities[slot].flags & AOI_WATCHER)
    algo_dirty_whole(&xl->dirty, slot);
}

static int xlist_add(algo *a, uint64_t id, float x, float y, float radius,
                     unsigned flags, uint32_t layers, uint32_t interest)
{
  xlist *xl = (xlist *)a;
  if (algo_find_slot(a, id) != ALGO_NO_SLOT)
    return AOI_EEXIST;
  if (a->entity_count > SLOT_MASK)
    bench_die("xlist: more than 2^30 slots");
  uint32_t slot = algo_new_entity(a, id, x, y, radius, flags, layers,
                                  interest);
  reserve_slots(xl);
  xl->slots[slot].moving = 0;
  wait_for_tick(xl, slot);
  return 0;
}

/* Slot `slot` (id `id`) leaves the lists: each of its pairs goes (a
   watcher whose box held it is told), and its nodes are ghosts until the
   tick. */
static void leave_lists(xlist *xl, uint32_t slot, uint64_t id)
{
  xl_slot *s = &xl->slots[slot];
  for (int which = INBOX; which <= BOXED; which++) {
    xl_pairs *list = &s->side[which];
    for (uint32_t k = 0; k < list->count; k++) {
      if (which == BOXED)
        algo_dirty_note(&xl->base, &xl->dirty, list->items[k].other, id,
                        slot);
      cut(xl, list->items[k].other, !which, list->items[k].back);
    }
    list->count = 0;
  }
  xl->places[slot].stamp = 0;
  xl->ghosts = 1;
  s->state = XL_OUT;
}

/* Marker m moved from where its node's keys say: its nodes walk, its
   boxes follow. */
static void move_marker(xlist *xl, uint32_t m)
{
  algo *a = &xl->base;
  const algo_entity *e = &a->entities[m];
  xl_place *p = &xl->places[m];
  if (!xl->slots[m].moving) {
    xl->slots[m].moving = 1;
    ALGO_RESERVE(a, xl->moving, xl->moving_capacity, xl->moving_count + 1);
    xl->moving[xl->moving_count++] = m;
  }
  uint32_t ox = p->key[0], oy = p->key[1];
  uint32_t x = key_of(e->x), y = key_of(e->y);
  begin_walks(xl, m);
  walk(xl, &xl->axis[0], item_of(ox, ROLE_MID, m), item_of(x, ROLE_MID, m));
  walk(xl, &xl->axis[1], item_of(oy, ROLE_MID, m), item_of(y, ROLE_MID, m));
  p->key[0] = x;
  p->key[1] = y;
  for (size_t k = 0; k < xl->met_count; k++) {
    uint32_t w = xl->met[k];
    const uint32_t *box = xl->places[w].box;
    int was = boxed(box, ox, oy), is = boxed(box, x, y);
    if (was == is)
      continue;
    if (is) {
      add_pair(xl, w, m); /* noted at the tick */
    } else {
      drop_pair(xl, w, m);
      algo_dirty_note(a, &xl->dirty, w, e->id, m);
    }
  }
}

/* Watcher w moved: its triggers walk, its box follows. */
static void move_watcher(xlist *xl, uint32_t w)
{
  xl_place *p = &xl->places[w];
  uint32_t was[4], is[4];
  memcpy(was, p->box, sizeof(was));
  box_of(xl, w, is);
  algo_dirty_whole(&xl->dirty, w);
  if (memcmp(was, is, sizeof(is)) == 0)
    return;
  begin_walks(xl, w);
  for (int axis = 0; axis < 2; axis++) {
    walk(xl, &xl->axis[axis], item_of(was[axis], ROLE_LOW, w),
         item_of(is[axis], ROLE_LOW, w));
    walk(xl, &xl->axis[axis], item_of(was[axis + 2], ROLE_HIGH, w),
         item_of(is[axis + 2], ROLE_HIGH, w));
  }
  memcpy(p->box, is, sizeof(is));
  for (size_t k = 0; k < xl->met_count; k++) {
    uint32_t m = xl->met[k];
    const uint32_t *key = xl->places[m].key;
    int held = boxed(was, key[0], key[1]), holds = boxed(is, key[0], key[1]);
    if (held != holds) {
      if (holds)
        add_pair(xl, w, m);
      else
        drop_pair(xl, w, m);
    }
  }
}

static int xlist_move(algo *a, uint64_t id, float x, float y)
{
  xlist *xl = (xlist *)a;
  uint32_t slot = algo_find_slot(a, id);
  if (slot == ALGO_NO_SLOT)
    return AOI_ENOENT;
  const algo_entity *e = &a->entities[slot];
  if (algo_same_place(e, x, y))
    return 0; /* nothing changes for anyone */
  int jump = fabs((double)x - e->x) > xl->jump ||
             fabs((double)y - e->y) > xl->jump;
  algo_set_position(a, slot, x, y);
  if (xl->slots[slot].state != XL_IN)
    return 0; /* placed at the tick */
  if (jump) {
    leave_lists(xl, slot, id);
    wait_for_tick(xl, slot);
    return 0;
  }
  if (e->flags & AOI_MARKER)
    move_marker(xl, slot);
  if (e->flags & AOI_WATCHER)
    move_watcher(xl, slot);
  return 0;
}

static int xlist_remove(algo *a, uint64_t id)
{
  xlist *xl = (xlist *)a;
  uint32_t slot = algo_find_slot(a, id);
  if (slot == ALGO_NO_SLOT)
    return AOI_ENOENT;
  if (xl->slots[slot].state == XL_IN)
    leave_lists(xl, slot, id);
  xl->slots[slot].state = XL_OUT;
  xl->slots[slot].moving = 0; /* its listing is skipped at the tick */
  if (a->entities[slot].flags & AOI_WATCHER)
    algo_dirty_drop(&xl->dirty, slot);
  algo_free_entity(a, slot);
  return 0;
}

/* ---- the tick: new nodes ------------------------------------------------ */

static int compare_items(const void *pa, const void *pb)
{
  xl_item a = *(const xl_item *)pa, b = *(const xl_item *)pb;
  return (a > b) - (a < b);
}

/* The new slot's nodes on one axis (0: x, 1: y), into `out`; returns how
   many. */
static size_t new_nodes(const xlist *xl, uint32_t slot, int axis,
                        xl_item *out)
{
  const xl_place *p = &xl->places[slot];
  unsigned flags = xl->base.entities[slot].flags;
  size_t n = 0;
  if (flags & AOI_WATCHER)
    out[n++] = item_of(p->box[axis], ROLE_LOW, slot);
  if (flags & AOI_MARKER)
    out[n++] = item_of(p->key[axis], ROLE_MID, slot);
  if (flags & AOI_WATCHER)
    out[n++] = item_of(p->box[axis + 2], ROLE_HIGH, slot);
  return n;
}

/* One axis: drops the ghosts (nodes of slots not in the lists, or placed
   anew at this tick) and merges in the new slots' nodes, in one pass. */
static void relink(xlist *xl, xl_axis *ax, int axis, const uint32_t *fresh,
                   size_t count)
{
  algo *a = &xl->base;
  ALGO_RESERVE(a, ax->items, ax->capacity, ax->count + 3 * count);
  /* The new nodes after the old ones, sorted. */
  xl_item *added = ax->items + ax->count;
  size_t n = 0;
  for (size_t k = 0; k < count; k++)
    n += new_nodes(xl, fresh[k], axis, added + n);
  if (n > 1)
    qsort(added, n, sizeof(*added), compare_items);
  ALGO_RESERVE(a, xl->merged, xl->merged_capacity, ax->count + n);
  size_t i = 0, j = 0, out = 0;
  while (i < ax->count || j < n) {
    if (j == n || (i < ax->count && ax->items[i] < added[j])) {
      xl_item item = ax->items[i++];
      const xl_slot *s = &xl->slots[item_slot(item)];
      if (s->state == XL_IN && s->placed != a->tick)
        xl->merged[out++] = item;
    } else {
      xl->merged[out++] = added[j++];
    }
  }
  xl_item *items = ax->items;
  size_t capacity = ax->capacity;
  ax->items = xl->merged;
  ax->capacity = xl->merged_capacity;
  ax->count = out;
  xl->merged = items;
  xl->merged_capacity = capacity;
}

static void open_box(xlist *xl, uint32_t w, int fresh)
{
  ALGO_RESERVE(&xl->base, xl->open[fresh], xl->open_capacity[fresh],
               xl->open_count[fresh] + 1);
  xl_open *o = &xl->open[fresh][xl->open_count[fresh]];
  o->y0 = xl->places[w].box[1];
  o->y1 = xl->places[w].box[3];
  o->slot = w;
  xl->slots[w].active = (uint32_t)xl->open_count[fresh]++;
}

static void close_box(xlist *xl, uint32_t w, int fresh)
{
  xl_open *list = xl->open[fresh];
  uint32_t i = xl->slots[w].active;
  size_t last = --xl->open_count[fresh];
  if (i == last)
    return;
  list[i] = list[last];
  xl->slots[list[i].slot].active = i;
}

/* Marker m, at y, against the boxes open in list `fresh`: the new pairs,
   noted to the old watchers when m is new. */
static void pair_open(xlist *xl, uint32_t m, uint32_t y, int fresh, int note)
{
  algo *a = &xl->base;
  const xl_open *list = xl->open[fresh];
  for (size_t k = 0; k < xl->open_count[fresh]; k++)
    if (list[k].y0 <= y && y <= list[k].y1 && list[k].slot != m) {
      add_pair(xl, list[k].slot, m);
      if (note)
        algo_dirty_note(a, &xl->dirty, list[k].slot, a->entities[m].id, m);
    }
}

/* The new pairs: one sweep of the x array, the boxes open at each point
   being those whose low trigger is behind and high trigger ahead. */
static void sweep(xlist *xl)
{
  const xl_axis *ax = &xl->axis[0];
  uint32_t tick = xl->base.tick;
  xl->open_count[0] = xl->open_count[1] = 0;
  for (size_t i = 0; i < ax->count; i++) {
    uint32_t slot = item_slot(ax->items[i]);
    int fresh = xl->slots[slot].placed == tick;
    unsigned role = item_role(ax->items[i]);
    if (role == ROLE_LOW) {
      open_box(xl, slot, fresh);
    } else if (role == ROLE_HIGH) {
      close_box(xl, slot, fresh);
    } else {
      uint32_t y = xl->places[slot].key[1];
      if (fresh)
        pair_open(xl, slot, y, 0, 1);
      pair_open(xl, slot, y, 1, 0);
    }
  }
}

static void place_new(xlist *xl)
{
  algo *a = &xl->base;
  size_t count = 0;
  for (size_t k = 0; k < xl->fresh_count; k++) {
    uint32_t slot = xl->fresh[k];
    xl_slot *s = &xl->slots[slot];
    if (s->state != XL_NEW)
      continue; /* removed since, or listed twice */
    const algo_entity *e = &a->entities[slot];
    xl_place *p = &xl->places[slot];
    s->state = XL_IN;
    s->placed = a->tick;
    p->key[0] = key_of(e->x);
    p->key[1] = key_of(e->y);
    if (e->flags & AOI_WATCHER)
      box_of(xl, slot, p->box);
    p->stamp = 1;
    xl->fresh[count++] = slot;
  }
  xl->fresh_count = 0;
  if (count == 0 && !xl->ghosts)
    return;
  relink(xl, &xl->axis[0], 0, xl->fresh, count);
  relink(xl, &xl->axis[1], 1, xl->fresh, count);
  xl->ghosts = 0;
  if (count > 0)
    sweep(xl);
}

/* ---- the tick ----------------------------------------------------------- */

/* The markers of watcher `slot`'s box within its keep reach. */
static size_t gather(algo *a, uint32_t slot)
{
  xlist *xl = (xlist *)a;
  const algo_entity *w = &a->entities[slot];
  const xl_pairs *in = &xl->slots[slot].side[INBOX];
  double reach = algo_keep_reach(a, w);
  ALGO_RESERVE(a, a->candidates, a->candidate_capacity, in->count);
  size_t n = 0;
  for (uint32_t k = 0; k < in->count; k++) {
    uint32_t m = in->items[k].other;
    const algo_entity *e = &a->entities[m];
    if ((w->interest & e->layers) &&
        algo_within(a, w->x, w->y, e->x, e->y, reach))
      a->candidates[n++] = algo_sight(a, m);
  }
  return n;
}

/* Every marker that moved notes itself to the watchers whose box holds
   it now. */
static void note_moved(xlist *xl)
{
  algo *a = &xl->base;
  for (size_t k = 0; k < xl->moving_count; k++) {
    uint32_t m = xl->moving[k];
    if (!xl->slots[m].moving)
      continue; /* removed since, or listed twice */
    xl->slots[m].moving = 0;
    const xl_pairs *by = &xl->slots[m].side[BOXED];
    for (uint32_t j = 0; j < by->count; j++)
      algo_dirty_note(a, &xl->dirty, by->items[j].other,
                      a->entities[m].id, m);
  }
  xl->moving_count = 0;
}

static void xlist_tick(algo *a)
{
  xlist *xl = (xlist *)a;
  algo_begin_tick(a);
  note_moved(xl);
  place_new(xl);
  algo_dirty_run(a, &xl->dirty, gather);
  algo_end_tick(a);
}

const algo_class algo_xlist = {
    "xlist",
    "x and y sorted lists, triggers at reach; moves walk, jumps re-enter",
    xlist_create, xlist_destroy, xlist_add, xlist_move, xlist_remove,
    xlist_tick};
