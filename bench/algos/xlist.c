/*
 * xlist.c: the cross-linked list AOI, as KBEngine and BigWorld build it:
 * two doubly linked lists, one along x and one along y, each holding every
 * entity's node sorted by its coordinate, and for every watcher two trigger
 * nodes on each list at the edges of its reach box (radius + hysteresis
 * either way; for `cells C`, the edges of the cells it sees). Whatever
 * moves is walked to its new place along each list, node by node, as an
 * insertion sort would; the nodes it passes are the only ones whose order
 * with it changed.
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
 * Adds. Inserting a node by walking from an end of a list costs O(N) a
 * node, O(N^2) for a crowd. So an add only records the entity, and the
 * tick merges every new node into the lists in one sorted pass, then
 * sweeps the x list once with the boxes open at each point (those whose low
 * trigger is behind and high trigger ahead) to find the new pairs. A move
 * is always a walk: a teleport walks the whole way, which is what this
 * algorithm costs.
 */
#include "algo_core.h"

#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* A slot's three nodes on each list, whose roles are also their order at
   equal keys: a watcher's low trigger, the entity itself (markers only),
   a watcher's high trigger. */
enum { ROLE_LOW = 0, ROLE_MID = 1, ROLE_HIGH = 2 };
#define NODE(slot, role) ((uint32_t)(slot) * 3 + (role))
#define NONE UINT32_MAX

typedef struct xl_node {
  double key;
  uint32_t prev, next;
} xl_node;

typedef struct xl_axis {
  xl_node *nodes; /* 3 per slot */
  uint32_t head, tail;
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
  uint32_t stamp;  /* the walk that last met it */
  uint32_t placed; /* the tick its nodes were linked at */
  uint32_t active; /* the sweep: its place in an open-box list */
  uint8_t state;
  uint8_t moving; /* a marker that moved since the last tick (listed) */
} xl_slot;

/* A box open at the sweep's point: its y bounds, read in the inner loop. */
typedef struct xl_open {
  double y0, y1;
  uint32_t slot;
} xl_open;

typedef struct xl_sorted {
  double key;
  uint32_t node;
} xl_sorted;

typedef struct xlist {
  algo base;
  xl_axis x, y;
  xl_slot *slots;
  size_t slot_capacity;
  uint32_t stamp;
  uint32_t *met; /* the partners a walk passed */
  size_t met_count, met_capacity;
  uint32_t *fresh; /* added since the last tick */
  size_t fresh_count, fresh_capacity;
  uint32_t *moving; /* markers that moved since the last tick */
  size_t moving_count, moving_capacity;
  xl_sorted *sorted;
  size_t sorted_capacity;
  xl_open *open[2]; /* the sweep's open boxes: [0] old, [1] new */
  size_t open_count[2], open_capacity[2];
  algo_dirty dirty;
} xlist;

/* ---- the lists ---------------------------------------------------------- */

/* The lists' order: key, then role, then node. */
static int less(const xl_node *nodes, uint32_t a, uint32_t b)
{
  if (nodes[a].key != nodes[b].key)
    return nodes[a].key < nodes[b].key;
  if (a % 3 != b % 3)
    return a % 3 < b % 3;
  return a < b;
}

static void unlink_node(xl_axis *ax, uint32_t n)
{
  xl_node *nodes = ax->nodes;
  uint32_t p = nodes[n].prev, q = nodes[n].next;
  if (p != NONE)
    nodes[p].next = q;
  else
    ax->head = q;
  if (q != NONE)
    nodes[q].prev = p;
  else
    ax->tail = p;
}

/* Links n before `at`, or at the tail when `at` is NONE. */
static void link_before(xl_axis *ax, uint32_t at, uint32_t n)
{
  xl_node *nodes = ax->nodes;
  uint32_t p = at == NONE ? ax->tail : nodes[at].prev;
  nodes[n].prev = p;
  nodes[n].next = at;
  if (p != NONE)
    nodes[p].next = n;
  else
    ax->head = n;
  if (at != NONE)
    nodes[at].prev = n;
  else
    ax->tail = n;
}

/* A walk passed node p: keeps p's owner when it is a partner of the walking
   node n (a trigger for an entity node, an entity node for a trigger). */
static void meet(xlist *xl, uint32_t n, uint32_t p)
{
  uint32_t owner = p / 3;
  if ((n % 3 == ROLE_MID) == (p % 3 == ROLE_MID) || owner == n / 3 ||
      xl->slots[owner].stamp == xl->stamp)
    return;
  xl->slots[owner].stamp = xl->stamp;
  ALGO_RESERVE(&xl->base, xl->met, xl->met_capacity, xl->met_count + 1);
  xl->met[xl->met_count++] = owner;
}

/* Sets node n's key and walks it to its place, meeting what it passes. */
static void walk(xlist *xl, xl_axis *ax, uint32_t n, double key)
{
  xl_node *nodes = ax->nodes;
  nodes[n].key = key;
  uint32_t p = nodes[n].next, last = NONE;
  while (p != NONE && less(nodes, p, n)) {
    meet(xl, n, p);
    last = p;
    p = nodes[p].next;
  }
  if (last != NONE) {
    unlink_node(ax, n);
    link_before(ax, nodes[last].next, n);
    return;
  }
  p = nodes[n].prev;
  while (p != NONE && less(nodes, n, p)) {
    meet(xl, n, p);
    last = p;
    p = nodes[p].prev;
  }
  if (last != NONE) {
    unlink_node(ax, n);
    link_before(ax, last, n);
  }
}

static void begin_walks(xlist *xl)
{
  xl->stamp++;
  xl->met_count = 0;
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

/* Whether watcher w's box, on the lists, holds the point (x, y). */
static int boxed(const xlist *xl, uint32_t w, double x, double y)
{
  const xl_node *nx = xl->x.nodes, *ny = xl->y.nodes;
  return nx[NODE(w, ROLE_LOW)].key <= x && x <= nx[NODE(w, ROLE_HIGH)].key &&
         ny[NODE(w, ROLE_LOW)].key <= y && y <= ny[NODE(w, ROLE_HIGH)].key;
}

static int box_holds(const algo_box *b, double x, double y)
{
  return b->x0 <= x && x <= b->x1 && b->y0 <= y && y <= b->y1;
}

/* ---- operations --------------------------------------------------------- */

static algo *xlist_create(const algo_params *params)
{
  xlist *xl = algo_new(&algo_xlist, params->config, sizeof(*xl));
  xl->x.head = xl->x.tail = xl->y.head = xl->y.tail = NONE;
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
  free(xl->x.nodes);
  free(xl->y.nodes);
  free(xl->met);
  free(xl->fresh);
  free(xl->moving);
  free(xl->sorted);
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
  xl->x.nodes = algo_resize(a, xl->x.nodes, 3 * old * sizeof(xl_node),
                            3 * cap * sizeof(xl_node));
  xl->y.nodes = algo_resize(a, xl->y.nodes, 3 * old * sizeof(xl_node),
                            3 * cap * sizeof(xl_node));
  xl->slot_capacity = cap;
  algo_dirty_reserve(a, &xl->dirty);
}

static int xlist_add(algo *a, uint64_t id, float x, float y, float radius,
                     unsigned flags, uint32_t layers, uint32_t interest)
{
  xlist *xl = (xlist *)a;
  if (algo_find_slot(a, id) != ALGO_NO_SLOT)
    return AOI_EEXIST;
  uint32_t slot = algo_new_entity(a, id, x, y, radius, flags, layers,
                                  interest);
  reserve_slots(xl);
  xl->slots[slot].state = XL_NEW;
  xl->slots[slot].moving = 0;
  ALGO_RESERVE(a, xl->fresh, xl->fresh_capacity, xl->fresh_count + 1);
  xl->fresh[xl->fresh_count++] = slot;
  if (flags & AOI_WATCHER)
    algo_dirty_whole(a, &xl->dirty, slot);
  return 0;
}

/* Marker m moved from (ox, oy): its nodes walk, its boxes follow. */
static void move_marker(xlist *xl, uint32_t m, float ox, float oy)
{
  algo *a = &xl->base;
  const algo_entity *e = &a->entities[m];
  if (!xl->slots[m].moving) {
    xl->slots[m].moving = 1;
    ALGO_RESERVE(a, xl->moving, xl->moving_capacity, xl->moving_count + 1);
    xl->moving[xl->moving_count++] = m;
  }
  begin_walks(xl);
  walk(xl, &xl->x, NODE(m, ROLE_MID), e->x);
  walk(xl, &xl->y, NODE(m, ROLE_MID), e->y);
  for (size_t k = 0; k < xl->met_count; k++) {
    uint32_t w = xl->met[k];
    int was = boxed(xl, w, ox, oy), is = boxed(xl, w, e->x, e->y);
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
  algo *a = &xl->base;
  const algo_entity *e = &a->entities[w];
  algo_box was = {xl->x.nodes[NODE(w, ROLE_LOW)].key,
                  xl->y.nodes[NODE(w, ROLE_LOW)].key,
                  xl->x.nodes[NODE(w, ROLE_HIGH)].key,
                  xl->y.nodes[NODE(w, ROLE_HIGH)].key};
  algo_box is;
  algo_reach_box(a, e->x, e->y, algo_keep_reach(a, e), &is);
  algo_dirty_whole(a, &xl->dirty, w);
  if (memcmp(&was, &is, sizeof(is)) == 0)
    return;
  begin_walks(xl);
  walk(xl, &xl->x, NODE(w, ROLE_LOW), is.x0);
  walk(xl, &xl->x, NODE(w, ROLE_HIGH), is.x1);
  walk(xl, &xl->y, NODE(w, ROLE_LOW), is.y0);
  walk(xl, &xl->y, NODE(w, ROLE_HIGH), is.y1);
  for (size_t k = 0; k < xl->met_count; k++) {
    uint32_t m = xl->met[k];
    double mx = a->entities[m].x, my = a->entities[m].y;
    int held = box_holds(&was, mx, my), holds = box_holds(&is, mx, my);
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
  if (algo_same_place(&a->entities[slot], x, y))
    return 0; /* nothing changes for anyone */
  float ox = a->entities[slot].x, oy = a->entities[slot].y;
  algo_set_position(a, slot, x, y);
  if (xl->slots[slot].state != XL_IN)
    return 0; /* placed at the tick */
  if (a->entities[slot].flags & AOI_MARKER)
    move_marker(xl, slot, ox, oy);
  if (a->entities[slot].flags & AOI_WATCHER)
    move_watcher(xl, slot);
  return 0;
}

static int xlist_remove(algo *a, uint64_t id)
{
  xlist *xl = (xlist *)a;
  uint32_t slot = algo_find_slot(a, id);
  if (slot == ALGO_NO_SLOT)
    return AOI_ENOENT;
  xl_slot *s = &xl->slots[slot];
  unsigned flags = a->entities[slot].flags;
  if (s->state == XL_IN) {
    /* Each pair's other side goes (a watcher whose box held it is told);
       this slot's sides are emptied whole. */
    for (int which = INBOX; which <= BOXED; which++) {
      xl_pairs *list = &s->side[which];
      for (uint32_t k = 0; k < list->count; k++) {
        if (which == BOXED)
          algo_dirty_note(a, &xl->dirty, list->items[k].other, id, slot);
        cut(xl, list->items[k].other, !which, list->items[k].back);
      }
      list->count = 0;
    }
    for (int role = ROLE_LOW; role <= ROLE_HIGH; role++)
      if ((role == ROLE_MID ? AOI_MARKER : AOI_WATCHER) & flags) {
        unlink_node(&xl->x, NODE(slot, role));
        unlink_node(&xl->y, NODE(slot, role));
      }
  }
  s->state = XL_OUT;
  s->moving = 0; /* its listing is skipped at the tick */
  if (flags & AOI_WATCHER)
    algo_dirty_drop(&xl->dirty, slot);
  algo_free_entity(a, slot);
  return 0;
}

/* ---- the tick: new nodes ------------------------------------------------ */

static int compare_sorted(const void *pa, const void *pb)
{
  const xl_sorted *a = pa, *b = pb;
  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  if (a->node % 3 != b->node % 3)
    return a->node % 3 < b->node % 3 ? -1 : 1;
  return (a->node > b->node) - (a->node < b->node);
}

/* Links the n nodes of xl->sorted (in the lists' order) in one pass. */
static void merge(xl_axis *ax, const xl_sorted *sorted, size_t n)
{
  uint32_t p = ax->head;
  for (size_t k = 0; k < n; k++) {
    uint32_t q = sorted[k].node;
    while (p != NONE && less(ax->nodes, p, q))
      p = ax->nodes[p].next;
    link_before(ax, p, q);
  }
}

/* Sets the keys of a new slot's nodes on one axis (0: x, 1: y) and lists
   them for the merge. */
static size_t list_new_nodes(xlist *xl, uint32_t slot, int axis, size_t n)
{
  algo *a = &xl->base;
  const algo_entity *e = &a->entities[slot];
  xl_node *nodes = axis ? xl->y.nodes : xl->x.nodes;
  if (e->flags & AOI_MARKER)
    nodes[NODE(slot, ROLE_MID)].key = axis ? e->y : e->x;
  if (e->flags & AOI_WATCHER) {
    algo_box box;
    algo_reach_box(a, e->x, e->y, algo_keep_reach(a, e), &box);
    nodes[NODE(slot, ROLE_LOW)].key = axis ? box.y0 : box.x0;
    nodes[NODE(slot, ROLE_HIGH)].key = axis ? box.y1 : box.x1;
  }
  for (int role = ROLE_LOW; role <= ROLE_HIGH; role++)
    if ((role == ROLE_MID ? AOI_MARKER : AOI_WATCHER) & e->flags) {
      xl->sorted[n].node = NODE(slot, role);
      xl->sorted[n].key = nodes[NODE(slot, role)].key;
      n++;
    }
  return n;
}

static void open_box(xlist *xl, uint32_t w, int fresh)
{
  ALGO_RESERVE(&xl->base, xl->open[fresh], xl->open_capacity[fresh],
               xl->open_count[fresh] + 1);
  xl_open *o = &xl->open[fresh][xl->open_count[fresh]];
  o->y0 = xl->y.nodes[NODE(w, ROLE_LOW)].key;
  o->y1 = xl->y.nodes[NODE(w, ROLE_HIGH)].key;
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
static void pair_open(xlist *xl, uint32_t m, double y, int fresh, int note)
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

/* The new pairs: one sweep of the x list, the boxes open at each point
   being those whose low trigger is behind and high trigger ahead. */
static void sweep(xlist *xl)
{
  uint32_t tick = xl->base.tick;
  xl->open_count[0] = xl->open_count[1] = 0;
  for (uint32_t p = xl->x.head; p != NONE; p = xl->x.nodes[p].next) {
    uint32_t slot = p / 3;
    int fresh = xl->slots[slot].placed == tick;
    if (p % 3 == ROLE_LOW) {
      open_box(xl, slot, fresh);
    } else if (p % 3 == ROLE_HIGH) {
      close_box(xl, slot, fresh);
    } else {
      double y = xl->y.nodes[NODE(slot, ROLE_MID)].key;
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
    uint32_t s = xl->fresh[k];
    if (xl->slots[s].state != XL_NEW)
      continue; /* removed since, or listed twice */
    xl->slots[s].state = XL_IN;
    xl->slots[s].placed = a->tick;
    xl->fresh[count++] = s;
  }
  xl->fresh_count = 0;
  if (count == 0)
    return;
  ALGO_RESERVE(a, xl->sorted, xl->sorted_capacity, 3 * count);
  for (int axis = 0; axis < 2; axis++) {
    size_t n = 0;
    for (size_t k = 0; k < count; k++)
      n = list_new_nodes(xl, xl->fresh[k], axis, n);
    qsort(xl->sorted, n, sizeof(*xl->sorted), compare_sorted);
    merge(axis ? &xl->y : &xl->x, xl->sorted, n);
  }
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
    "x and y sorted lists, trigger nodes at reach; every move walks",
    xlist_create, xlist_destroy, xlist_add, xlist_move, xlist_remove,
    xlist_tick};
