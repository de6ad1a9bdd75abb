/*
 * outbox.c: delivery. A tick leaves each worker's events in its segment, as
 * compact records (see aoi__segment in types.h); the host takes them out
 * with aoi_deliver, one segment per host thread if it likes, or by id with
 * aoi_drain; aoi_deliver_slots (and aoi_deliver_many_slots, tick.c) hands
 * a record's handles over as they are, with the marks as the table they
 * index (aoi_slot is aoi__mark). A watcher's outbox is its backlog: the
 * events of earlier ticks that nobody took before the next tick began,
 * expanded there in full (aoi__segments_settle), so that a host that
 * drains late loses nothing.
 *
 * Threads: during a tick, worker i alone writes segment i and the records
 * of its watchers. Between ticks the host owns everything, except that
 * aoi_deliver of different segments may run at once on different threads:
 * each touches only its segment, its segment's watchers' records and
 * outboxes (a watcher belongs to exactly one segment's delivery: by its
 * record, or else by aoi__segments_assign), and reads the marks, which
 * nothing writes between ticks.
 *
 * The pending list (aoi_pending) is built on demand from the records and
 * the backlog: only hosts that ask for it pay for its sort.
 */
#include "internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

aoi_event *aoi__outbox_reserve(const aoi_allocator *a, aoi__outbox *outbox,
                               uint32_t count, uint32_t hint)
{
  if (outbox->count > UINT32_MAX - count)
    return NULL;
  /* A drained outbox that once held a long backlog (a host that drained
     late) gives the excess back, so memory follows the crowd, not the
     worst backlog ever seen. If the shrink fails, it keeps what it had. */
  if (outbox->count == 0 && outbox->capacity > 4 * count + 256) {
    uint32_t capacity = 2 * count + 64;
    aoi_event *smaller = aoi__realloc(a, outbox->events,
                                      sizeof(aoi_event) * outbox->capacity,
                                      sizeof(aoi_event) * capacity);
    if (smaller != NULL) {
      outbox->events = smaller;
      outbox->capacity = capacity;
    }
  }
  uint32_t need = outbox->count + count;
  if (need > outbox->capacity) {
    uint32_t capacity = aoi__roomy(need, hint);
    aoi_event *bigger = aoi__realloc(a, outbox->events,
                                     sizeof(aoi_event) * outbox->capacity,
                                     sizeof(aoi_event) * capacity);
    if (bigger == NULL)
      return NULL;
    outbox->events = bigger;
    outbox->capacity = capacity;
  }
  return outbox->events + outbox->count;
}

int aoi__outbox_append(const aoi_allocator *a, aoi__outbox *outbox,
                       const aoi_event *events, uint32_t count)
{
  if (count == 0)
    return 0;
  aoi_event *room = aoi__outbox_reserve(a, outbox, count, 0);
  if (room == NULL)
    return AOI_ENOMEM;
  memcpy(room, events, sizeof(aoi_event) * count);
  outbox->count += count;
  return 0;
}

void aoi__outbox_free(const aoi_allocator *a, aoi__outbox *outbox)
{
  aoi__free(a, outbox->events, sizeof(aoi_event) * outbox->capacity);
  memset(outbox, 0, sizeof(*outbox));
}

void aoi__pending_free(const aoi_allocator *a, aoi__pending *pending)
{
  aoi__free(a, pending->entries, sizeof(aoi__pending_entry) * pending->capacity);
  aoi__free(a, pending->ids, sizeof(uint64_t) * pending->ids_capacity);
  memset(pending, 0, sizeof(*pending));
}

void aoi__segment_free(const aoi_allocator *a, aoi__segment *segment)
{
  aoi__free(a, segment->words, sizeof(uint32_t) * segment->capacity);
  aoi__free(a, segment->scratch, sizeof(aoi_event) * segment->scratch_capacity);
  memset(segment, 0, sizeof(*segment));
}

static inline uint32_t record_events(const uint32_t *rec)
{
  aoi__record_head head = aoi__record_read(rec);
  return head.nl + head.ne + head.nm;
}

/* The words a record takes in its segment. */
static inline uint32_t record_words(const uint32_t *rec)
{
  aoi__record_head head = aoi__record_read(rec);
  return aoi__record_words(&head);
}

/* The handles of the entities a record's events name (its header read
   into *head): after the header, or for a view record (enters only) the
   watcher's view. */
static const uint32_t *record_handles(const aoi_world *w, const uint32_t *rec,
                                      aoi__record_head *head)
{
  *head = aoi__record_read(rec);
  if (!head->view)
    return rec + head->header;
  const aoi__location *at = &w->location[aoi__record_handle(rec)];
  const aoi__view *view = &w->shards[at->shard].entities[at->slot].view;
  AOI__ASSERT(head->nl == 0 && head->nm == 0 && view->count == head->ne);
  return view->handles;
}

/* Writes the events of one record, as the public events they stand for. */
static void expand(const aoi_world *w, const uint32_t *rec, uint32_t tick,
                   aoi_event *out)
{
  const aoi__mark *mark = w->mark;
  const uint64_t *tag = w->tag;
  aoi__record_head head;
  const uint32_t *hs = record_handles(w, rec, &head);
  uint32_t nl = head.nl, ne = head.ne, nm = head.nm, i = 0;
  for (; i < nl; i++)
    out[i] = (aoi_event){mark[hs[i]].id, tag[hs[i]], 0, 0, AOI_LEAVE, tick};
  for (; i < nl + ne; i++) {
    const aoi__mark *m = &mark[hs[i]];
    out[i] = (aoi_event){m->id, tag[hs[i]], m->x, m->y, AOI_ENTER, tick};
  }
  for (; i < nl + ne + nm; i++) {
    if (i + 8 < nl + ne + nm) {
      __builtin_prefetch(&mark[hs[i + 8]]);
      __builtin_prefetch(&tag[hs[i + 8]]);
    }
    const aoi__mark *m = &mark[hs[i]];
    out[i] = (aoi_event){m->id, tag[hs[i]], m->x, m->y, AOI_MOVE, tick};
  }
}

/* The segment that holds watcher h's record: its worker's, as of the last
   tick (a location changes only inside a tick). */
static aoi__segment *segment_of(aoi_world *w, uint32_t h)
{
  return &w->segments[aoi__worker_of(w, w->location[h].shard)];
}

/* Whether the record at `at` of seg is still to be taken (see
   aoi__segment). A record dies with its watcher's removal, which can only
   have come since the tick (limbo_count): without one, no gone bit is
   read. */
static inline bool record_live(const aoi_world *w, const aoi__segment *seg,
                               uint32_t at)
{
  const uint32_t *rec = seg->words + at;
  return at >= seg->delivered && !(rec[0] & AOI__RECORD_TAKEN) &&
         !(w->limbo_count > 0 && (w->handle_bits[rec[0]] & AOI__HANDLE_GONE));
}

static inline void record_take(aoi__segment *seg, uint32_t *rec)
{
  rec[0] |= AOI__RECORD_TAKEN;
  seg->taken++;
}

/* Writes each record's place (1 + its offset) to world->event_at with
   `on`, else 0 (before the segments are reused). Host only. */
static void index_records(aoi_world *w, bool on)
{
  if (w->records_indexed == on)
    return;
  for (unsigned i = 0; i < w->threads; i++) {
    const aoi__segment *seg = &w->segments[i];
    for (uint32_t at = 0; at < seg->count; at += record_words(seg->words + at))
      w->event_at[aoi__record_handle(seg->words + at)] = on ? at + 1 : 0;
  }
  w->records_indexed = on;
}

/* Live watcher h's record of the last tick (in *seg), if it is still to
   be taken, else NULL. Indexes the records on the first lookup after a
   tick. Host only. */
static uint32_t *record_of(aoi_world *w, uint32_t h, aoi__segment **seg)
{
  index_records(w, true);
  uint32_t at = w->event_at[h];
  if (at == 0)
    return NULL;
  *seg = segment_of(w, h);
  uint32_t *rec = (*seg)->words + (at - 1);
  AOI__ASSERT(aoi__record_handle(rec) == h);
  return record_live(w, *seg, at - 1) ? rec : NULL;
}

/* Notes h in the backlog list if it is not there. Room: a handle table. */
static void backlog_note(aoi_world *w, uint32_t h)
{
  if (w->handle_bits[h] & AOI__HANDLE_BACKLOG)
    return;
  w->handle_bits[h] |= AOI__HANDLE_BACKLOG;
  w->backlog[w->backlog_count++] = h;
}

/* Appends watcher h's live record rec (in `seg`) to its outbox and takes
   it. 0 or AOI_ENOMEM (nothing changed). Touches only h's own state and
   `seg`, so aoi_deliver may call it for its segment. */
static int record_append(aoi_world *w, aoi__segment *seg, uint32_t h,
                         uint32_t *rec)
{
  uint32_t n = record_events(rec);
  aoi_event *room = aoi__outbox_reserve(&w->allocator, &w->outbox[h], n, 0);
  if (room == NULL)
    return AOI_ENOMEM;
  expand(w, rec, (uint32_t)w->tick, room);
  w->outbox[h].count += n;
  record_take(seg, rec);
  return 0;
}

/* Moves watcher h's record into its outbox, which joins the backlog. Host
   only. */
static int record_to_outbox(aoi_world *w, aoi__segment *seg, uint32_t h,
                            uint32_t *rec)
{
  int rc = record_append(w, seg, h, rec);
  if (rc == 0)
    backlog_note(w, h);
  return rc;
}

int aoi__segments_settle(aoi_world *w)
{
  AOI__ASSERT(aoi__lanes_idle(w));
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__segment *seg = &w->segments[i];
    if (seg->taken == seg->records)
      continue;
    for (uint32_t at = 0; at < seg->count;) {
      uint32_t *rec = seg->words + at;
      if (record_live(w, seg, at) &&
          record_to_outbox(w, seg, aoi__record_handle(rec), rec) != 0)
        return AOI_ENOMEM; /* (the index still holds: records stay put) */
      at += record_words(rec);
    }
  }
  index_records(w, false);
  for (unsigned i = 0; i < w->threads; i++) {
    aoi__segment *seg = &w->segments[i];
    seg->count = seg->records = seg->taken = seg->delivered = 0;
    seg->backlog_count = 0;
  }
  /* Drop drained or removed watchers from the backlog list. */
  uint32_t n = 0;
  for (uint32_t i = 0; i < w->backlog_count; i++) {
    uint32_t h = w->backlog[i];
    if (w->outbox[h].count > 0 && (w->host[h].flags & AOI__LIVE))
      w->backlog[n++] = h;
    else
      w->handle_bits[h] &= (uint8_t)~AOI__HANDLE_BACKLOG;
  }
  w->backlog_count = n;
  return 0;
}

void aoi__segments_assign(aoi_world *w)
{
  AOI__ASSERT(aoi__lanes_idle(w));
  unsigned segments = w->threads;
  aoi__segment *seg;
  for (unsigned i = 0; i < segments; i++)
    w->segments[i].backlog_count = 0;
  /* Count, place, fill: each backlog watcher without a record goes to the
     segment of its worker. */
  for (uint32_t i = 0; i < w->backlog_count; i++) {
    uint32_t h = w->backlog[i];
    if (w->outbox[h].count > 0 && record_of(w, h, &seg) == NULL)
      segment_of(w, h)->backlog_count++;
  }
  uint32_t from = 0;
  for (unsigned i = 0; i < segments; i++) {
    w->segments[i].backlog_from = from;
    from += w->segments[i].backlog_count;
    w->segments[i].backlog_count = 0;
  }
  for (uint32_t i = 0; i < w->backlog_count; i++) {
    uint32_t h = w->backlog[i];
    if (w->outbox[h].count > 0 && record_of(w, h, &seg) == NULL) {
      seg = segment_of(w, h);
      w->assigned[seg->backlog_from + seg->backlog_count++] = h;
    }
  }
}

int aoi_drain(aoi_world *w, uint64_t id, const aoi_event **events,
              size_t *count)
{
  if (w == NULL || events == NULL || count == NULL)
    return AOI_EINVAL;
  int busy = aoi__busy(w);
  if (busy != 0)
    return busy;
  uint32_t h = aoi__idmap_get(&w->ids, id);
  if (h == AOI__NONE)
    return AOI_ENOENT;
  aoi__segment *seg;
  uint32_t *rec = record_of(w, h, &seg);
  if (rec != NULL) {
    int rc = record_to_outbox(w, seg, h, rec);
    if (rc != 0)
      return rc;
  }
  aoi__outbox *o = &w->outbox[h];
  *events = o->events;
  *count = o->count;
  o->count = 0;
  return 0;
}

unsigned aoi_delivery_segments(const aoi_world *w)
{
  return w == NULL ? 0 : w->threads;
}

/* Where a delivery hands the events: `fn`, expanded, or with `slots` the
   events of the last tick alone unexpanded (aoi_deliver_slots), `fn`
   taking those with a backlog. */
typedef struct deliver_to {
  aoi_deliver_fn fn;
  aoi_deliver_slots_fn slots;
  void *user;
} deliver_to;

/* The slot table is the marks: the public aoi_slot is the same record. */
_Static_assert(sizeof(aoi_slot) == sizeof(aoi__mark) &&
                   offsetof(aoi_slot, id) == offsetof(aoi__mark, id) &&
                   offsetof(aoi_slot, x) == offsetof(aoi__mark, x) &&
                   offsetof(aoi_slot, y) == offsetof(aoi__mark, y),
               "aoi_slot is aoi__mark");

/* Hands watcher h's record rec, the last tick's events alone, to `to` as
   slots. */
static void deliver_slots_one(aoi_world *w, uint32_t h, const uint32_t *rec,
                              const deliver_to *to)
{
  aoi__record_head head;
  const uint32_t *hs = record_handles(w, rec, &head);
  if (head.nl + head.ne + head.nm == 0)
    return;
  aoi_slot_events events = {w->mark[h].id,
                            w->tag[h],
                            (const aoi_slot *)w->mark,
                            w->tag,
                            hs,
                            head.nl,
                            head.ne,
                            head.nm,
                            (uint32_t)w->tick};
  to->slots(to->user, &events);
}

/* Hands watcher h's events (backlog first, then its live record rec, if
   any) to `to`. Without `backlogs` (no outbox holds an event) the outbox
   is not read. */
static inline int deliver_one(aoi_world *w, aoi__segment *seg, uint32_t h,
                              uint32_t *rec, bool backlogs,
                              const deliver_to *to)
{
  aoi__outbox *o = &w->outbox[h];
  const aoi_event *events;
  uint32_t n;
  if (rec != NULL && (!backlogs || o->count == 0)) {
    /* the usual case: this tick's events only, handed over as slots or
       laid out in the scratch */
    if (to->slots != NULL) {
      seg->taken++; /* (aoi_deliver moves seg->delivered past it) */
      deliver_slots_one(w, h, rec, to);
      return 0;
    }
    n = record_events(rec);
    if (aoi__reserve(&w->allocator, (void **)&seg->scratch,
                     &seg->scratch_capacity, n, sizeof(aoi_event)) != 0)
      return AOI_ENOMEM;
    expand(w, rec, (uint32_t)w->tick, seg->scratch);
    events = seg->scratch;
    seg->taken++;
  } else {
    /* a backlog: this tick's events, if any, go after it */
    if (rec != NULL && record_append(w, seg, h, rec) != 0)
      return AOI_ENOMEM;
    events = o->events;
    n = o->count;
  }
  if (backlogs && o->count != 0) /* (no store when clear: the line may be
                                    shared) */
    o->count = 0;
  if (n > 0)
    to->fn(to->user, w->mark[h].id, w->tag[h], events, n);
  return 0;
}

/* The world whose delivery callback this thread is in, if any: a call
   from the callback into that world is refused (aoi.h, rule 4). The
   delivering count refuses every other call; this catches aoi_deliver. */
static _Thread_local const aoi_world *delivering_here;

static int deliver_segment(aoi_world *w, aoi__segment *seg,
                           const deliver_to *to);

/* aoi_deliver and aoi_deliver_slots, after their NULL checks. */
static int deliver(aoi_world *w, unsigned segment, const deliver_to *to)
{
  if (w->in_flight || delivering_here == w)
    return AOI_EBUSY;
  if (segment >= w->threads)
    return AOI_EINVAL;
  aoi__segment *seg = &w->segments[segment];
  /* Count this delivery before the claim, so that a call that sees no
     delivery running (aoi__busy) cannot overlap a claimed segment. */
  atomic_fetch_add_explicit(&w->delivering, 1, memory_order_acq_rel);
  if (atomic_exchange_explicit(&seg->claimed, true, memory_order_acquire)) {
    atomic_fetch_sub_explicit(&w->delivering, 1, memory_order_acq_rel);
    return AOI_EBUSY; /* another thread delivers this segment */
  }
  const aoi_world *outer = delivering_here;
  delivering_here = w;
  int rc = deliver_segment(w, seg, to);
  delivering_here = outer;
  /* release: the next claimant sees this delivery's writes */
  atomic_store_explicit(&seg->claimed, false, memory_order_release);
  atomic_fetch_sub_explicit(&w->delivering, 1, memory_order_acq_rel);
  return rc;
}

int aoi_deliver(aoi_world *w, unsigned segment, aoi_deliver_fn fn, void *user)
{
  if (w == NULL || fn == NULL)
    return AOI_EINVAL;
  return deliver(w, segment, &(deliver_to){fn, NULL, user});
}

int aoi_deliver_slots(aoi_world *w, unsigned segment, aoi_deliver_slots_fn fn,
                      aoi_deliver_fn backlog_fn, void *user)
{
  if (w == NULL || fn == NULL || backlog_fn == NULL)
    return AOI_EINVAL;
  return deliver(w, segment, &(deliver_to){backlog_fn, fn, user});
}

/* Delivers the claimed segment `seg` (aoi_deliver). */
static int deliver_segment(aoi_world *w, aoi__segment *seg,
                           const deliver_to *to)
{
  /* An outbox that holds events is on the backlog list, and a record is
     dead by its watcher's removal only after a removal since the tick
     (record_live): without either, nothing by handle but the watcher's id
     is read. (No other call runs during aoi_deliver: both counts stay.) */
  bool backlogs = w->backlog_count > 0, removals = w->limbo_count > 0;
  uint32_t tail = seg->backlog_from + seg->backlog_count;
  while (seg->backlog_count > 0) {
    /* (one with a record this tick is delivered with it, below) */
    uint32_t h = w->assigned[tail - seg->backlog_count];
    int rc = deliver_one(w, seg, h, NULL, true, to);
    if (rc != 0)
      return rc;
    seg->backlog_count--;
  }
  if (seg->taken == seg->records)
    return 0;
  for (uint32_t at = seg->delivered; at < seg->count;) {
    uint32_t *rec = seg->words + at;
    uint32_t h = aoi__record_handle(rec);
    uint32_t next = at + record_words(rec);
    if (next < seg->count) {
      /* the next watcher's tables, scattered over the handles, and the
         entities of its first events (expand fetches the rest ahead) */
      const uint32_t *after = seg->words + next;
      uint32_t g = aoi__record_handle(after);
      if (removals)
        __builtin_prefetch(&w->handle_bits[g]);
      if (backlogs)
        __builtin_prefetch(&w->outbox[g]);
      __builtin_prefetch(&w->mark[g]);
      aoi__record_head head = aoi__record_read(after);
      uint32_t words = aoi__record_words(&head) - head.header;
      for (uint32_t j = 0; j < words && j < 8; j++)
        __builtin_prefetch(&w->mark[after[head.header + j]]);
    }
    if (record_live(w, seg, at)) {
      int rc = deliver_one(w, seg, h, rec, backlogs, to);
      if (rc != 0)
        return rc;
    }
    at = seg->delivered = next;
  }
  return 0;
}

static int compare_entries(const void *a, const void *b)
{
  uint64_t x = ((const aoi__pending_entry *)a)->id;
  uint64_t y = ((const aoi__pending_entry *)b)->id;
  return (x > y) - (x < y);
}

int aoi__pending_update(aoi_world *w)
{
  const aoi_allocator *a = &w->allocator;
  aoi__pending *p = &w->pending;
  uint32_t most = w->backlog_count;
  for (unsigned i = 0; i < w->threads; i++)
    most += w->segments[i].records - w->segments[i].taken;
  if (aoi__reserve(a, (void **)&p->entries, &p->capacity, most + 1,
                   sizeof(aoi__pending_entry)) != 0 ||
      aoi__reserve(a, (void **)&p->ids, &p->ids_capacity, most + 1,
                   sizeof(uint64_t)) != 0)
    return AOI_ENOMEM;
  uint32_t n = 0;
  for (uint32_t i = 0; i < w->backlog_count; i++) {
    uint32_t h = w->backlog[i];
    if (w->outbox[h].count > 0 && (w->host[h].flags & AOI__LIVE))
      p->entries[n++] = (aoi__pending_entry){w->mark[h].id, h};
  }
  for (unsigned i = 0; i < w->threads; i++) {
    const aoi__segment *seg = &w->segments[i];
    if (seg->taken == seg->records)
      continue;
    for (uint32_t at = 0; at < seg->count;) {
      const uint32_t *rec = seg->words + at;
      uint32_t h = aoi__record_handle(rec);
      /* one with a backlog is listed already */
      if (record_live(w, seg, at) && w->outbox[h].count == 0)
        p->entries[n++] = (aoi__pending_entry){w->mark[h].id, h};
      at += record_words(rec);
    }
  }
  if (n > 1)
    qsort(p->entries, n, sizeof(*p->entries), compare_entries);
  for (uint32_t i = 0; i < n; i++)
    p->ids[i] = p->entries[i].id;
  p->count = p->ids_count = n;
  return 0;
}

int aoi_pending(aoi_world *w, const uint64_t **ids, size_t *count)
{
  if (w == NULL || ids == NULL || count == NULL)
    return AOI_EINVAL;
  int rc = aoi__busy(w);
  if (rc != 0)
    return rc;
  rc = aoi__pending_update(w);
  if (rc != 0)
    return rc;
  *ids = w->pending.ids;
  *count = w->pending.ids_count;
  return 0;
}
