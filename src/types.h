/*
 * types.h: the world's types, which every stage file reads: the op records
 * and queues (submit.c), entities, ghosts and views (apply.c, exchange.c,
 * compute.c), shards and workers (worker.c), the delivery segments and
 * outboxes (outbox.c), the rebalancing plan (rebalance.c), and struct
 * aoi_world itself (world.c). Types only, with the constants that size
 * them and the trivial inline accessors that belong to them (how a record
 * reads, where a view keeps its told positions); what a tick decides from
 * them (reaches, far-sighted watchers, whether pushes pay) and the
 * functions are in internal.h, which includes this file.
 *
 * Who owns what (the one rule every file keeps):
 *
 *  - The host thread owns the id map, the handle table (struct
 *    aoi__host_entity), the shards' op queues it is filling, the pending
 *    list and every outbox (the backlog), and between ticks the whole
 *    world. Then aoi_deliver calls on other threads may each take one
 *    segment, with its watchers' outboxes (outbox.c).
 *  - A tick's start and finish (tick.c) own the whole world too, on
 *    whichever thread runs them (the host's, or a pool thread's for
 *    aoi_tick_many), while the host waits: no lane runs then.
 *  - During a lane's step, the lane owns its shards (entities, ghosts,
 *    grid), its delivery segment (world->segments[i], where it writes its
 *    watchers' events) and, for every entity handle its shards own, that
 *    handle's entry in the location table (world->location) and its mark
 *    (world->mark). Ownership of a handle moves with the entity: a handoff
 *    message through a ring carries it from one lane to the next.
 *  - Lanes exchange data only through SPSC rings (ring.c): host -> shard
 *    (op queues), lane -> lane (handoff and ghost batches). A push
 *    publishes with release and a pop acquires, so what the producer wrote
 *    before the push is visible to the consumer after the pop. The steps
 *    are ordered by the lanes' count (lanes_left, acquire-release) and the
 *    pool's queue, and a host's wait by its job (pool.h); bells only wake
 *    sleepers and carry no data.
 *
 * Handles are 32-bit indices into the per-handle tables. A removed entity's
 * handle is reused only after the tick that applied the removal, when no view
 * can still hold it; one added and removed between the same two ticks was
 * never seen, and is reused at once.
 */
#ifndef AOI_TYPES_H
#define AOI_TYPES_H

#include "grid.h"
#include "idmap.h"
#include "ring.h"
#include "pool.h"
#include "sync.h"

/* View blocks (view.c): a view of up to AOI__VIEW_SLAB_MAX entries lives
   in a block of a capacity that is a multiple of AOI__VIEW_GRAIN, carved
   from chunks of a worker's (at least AOI__VIEW_CHUNK bytes) and kept on its
   free list for its capacity once given back; a larger one is a block of
   the allocator's. */
#define AOI__VIEW_GRAIN 8u
#define AOI__VIEW_SLAB_MAX 512u
#define AOI__VIEW_CLASSES (AOI__VIEW_SLAB_MAX / AOI__VIEW_GRAIN)
#define AOI__VIEW_CHUNK (64u * 1024u)

/* At most this many shards, those whose watchers see farthest, are sent
   ghosts by their own reach; the ghosts to the others are found by the
   largest reach among those (exchange.c). So one far-sighted watcher
   widens the ghost band around its own shard only. */
#define AOI__FAR_SHARDS 8

/* ---- outboxes and the pending list (outbox.c) -------------------------- */

typedef struct aoi__outbox {
  aoi_event *events;
  uint32_t count, capacity;
} aoi__outbox;

/* A delivery segment: the events worker i made in the last tick, as
   records of 32-bit words: the watcher's handle, its numbers of leaves,
   enters and moves, then the handles of the entities concerned in that
   order. An event is 4 bytes here; its id and position are read at
   delivery from world->mark, which no thread changes
   between ticks. Records left undelivered when the next tick begins are
   expanded into the watchers' outboxes first.
   A record is live until it is taken (delivered, drained, or moved into
   its outbox): aoi_deliver takes a segment's records in order (up to its
   `delivered` offset), any other path sets AOI__RECORD_TAKEN in the
   record's first word, below which every handle lies. The record of a
   watcher removed since is dead too: its handle is gone
   (AOI__HANDLE_GONE), and is not taken again before the next tick. The
   workers write nothing indexed by handle for a record (such a table's
   lines would be written by every worker at once): a lookup by handle
   goes through world->event_at, 1 + the offset of watcher h's record in
   its segment, which the host builds from the records on the first lookup
   after a tick (outbox.c), so that a host that only delivers never builds
   it.
   A watcher whose view was empty (new, or the first tick) has only enters,
   and they are its whole new view, in the same order: its record says so
   (AOI__RECORD_VIEW) and stores no handle, and delivery reads them from
   the view, which no thread changes between ticks either. A crowd's first
   tick then costs 8 bytes a watcher here, not 4 a marker it sees.

   The numbers fit one word when each is below 1024 (AOI__RECORD_HEADER
   words in all, where a record's events are written); else the word says
   AOI__RECORD_LONG and three more follow it, and the events move up to
   make room (AOI__RECORD_LONG_HEADER words). aoi__record_read reads
   either. */
#define AOI__RECORD_HEADER 2u
#define AOI__RECORD_LONG_HEADER 5u
#define AOI__RECORD_LONG 0x80000000u
#define AOI__RECORD_VIEW 0x40000000u
#define AOI__RECORD_TAKEN 0x80000000u /* in a record's first word */
#define AOI__RECORD_SHORT_MAX 1023u

/* What a record's header says. */
typedef struct aoi__record_head {
  uint32_t nl, ne, nm;
  uint32_t header; /* its words: where the events start */
  bool view;       /* its enters are the watcher's view, not stored */
} aoi__record_head;

static inline aoi__record_head aoi__record_read(const uint32_t *rec)
{
  uint32_t word = rec[1];
  aoi__record_head head;
  head.view = (word & AOI__RECORD_VIEW) != 0;
  if (word & AOI__RECORD_LONG) {
    head.nl = rec[2];
    head.ne = rec[3];
    head.nm = rec[4];
    head.header = AOI__RECORD_LONG_HEADER;
  } else {
    head.nl = word & AOI__RECORD_SHORT_MAX;
    head.ne = word >> 10 & AOI__RECORD_SHORT_MAX;
    head.nm = word >> 20 & AOI__RECORD_SHORT_MAX;
    head.header = AOI__RECORD_HEADER;
  }
  return head;
}

/* The words a record takes in its segment. */
static inline uint32_t aoi__record_words(const aoi__record_head *head)
{
  return head->header + (head->view ? 0 : head->nl + head->ne + head->nm);
}

/* The watcher of a record, taken or not. */
static inline uint32_t aoi__record_handle(const uint32_t *rec)
{
  return rec[0] & ~AOI__RECORD_TAKEN;
}

typedef struct aoi__segment {
  uint32_t *words;
  uint32_t count, capacity;
  uint32_t records;  /* records written */
  uint32_t taken;    /* records delivered or drained since */
  /* aoi_deliver took every record before this offset (they are not
     marked taken one by one: their lines stay clean) */
  uint32_t delivered;
  aoi_event *scratch; /* aoi_deliver's expansion of one watcher */
  uint32_t scratch_capacity;
  /* The watchers with an outbox backlog and no record, delivered with this
     segment: world->assigned[backlog_from ..][.. backlog_count]. */
  uint32_t backlog_from, backlog_count;
  /* Set while a thread delivers this segment: a second one is refused
     (AOI_EBUSY) instead of racing it. */
  atomic_bool claimed;
  char guard[AOI__LINE]; /* (AOI__LINE) */
} aoi__segment;

/* aoi_pending's answer, built on demand from the segments' records and the
   backlog (outbox.c). Host only. */
typedef struct aoi__pending_entry {
  uint64_t id;
  uint32_t handle;
} aoi__pending_entry;

typedef struct aoi__pending {
  aoi__pending_entry *entries; /* the sort's buffer */
  uint32_t count, capacity;
  uint64_t *ids; /* the answer of the last aoi_pending */
  uint32_t ids_count, ids_capacity;
} aoi__pending;

/* ---- entities, shards, workers, world ---------------------------------- */

/* What a queued record changes (aoi__record.what). */
#define AOI__RECORD_ADD 1u
#define AOI__RECORD_MOVE 2u
#define AOI__RECORD_RADIUS 4u
#define AOI__RECORD_LAYERS 8u
#define AOI__RECORD_REMOVE 16u
#define AOI__RECORD_APPEAL 32u
#define AOI__RECORD_CAP 64u

/* Every operation submitted on one handle since the last tick, coalesced
   into one record: the latest value of each field. A record that adds the
   entity carries all of its fields and never removes it (an add and a
   remove between the same two ticks cancel out); one that removes it
   carries nothing else. The worker applies the add, the position, the
   radius, the layers, the appeal and the cap, then the removal.

   Most records are a move alone, so a record is 16 bytes: the handle, the
   position, and `extra`, which says AOI__RECORD_JUST_MOVE or
   AOI__RECORD_JUST_REMOVE, or else where the rest is (aoi__record_extra,
   in the same queue). A record's target, the shard its position names, is
   not kept: the layout does not change between ticks, so the host names
   it again when it needs it (aoi__record_target, internal.h). */
typedef struct aoi__record {
  uint32_t handle;
  uint32_t extra; /* AOI__RECORD_JUST_*, or an index into the extras */
  float x, y;
} aoi__record;
_Static_assert(sizeof(aoi__record) == 16, "a record in 16 bytes");

#define AOI__RECORD_JUST_MOVE AOI__NONE
#define AOI__RECORD_JUST_REMOVE (AOI__NONE - 1)

/* The rest of a record that does more than move or remove. The id, kind,
   radius and appeal it adds or sets are not kept here: the handle's
   host entry (aoi__host_entity) holds their latest values, which the host
   does not change while a tick is in flight. */
typedef struct aoi__record_extra {
  uint32_t what;   /* AOI__RECORD_* */
  uint32_t record; /* host only: the index of its record */
  uint32_t layers, interest, cap;
} aoi__record_extra;

/* A shard's records for the next tick, at most one per handle
   (world->queued finds it), and their extras. Filled by the host between
   ticks, handed to the shard's worker through its op ring, read by it
   during the tick. */
typedef struct aoi__queue {
  aoi__record *records;
  aoi__record_extra *extras;
  uint32_t count, capacity;
  uint32_t extra_count, extra_capacity;
  aoi__peak peak;       /* host only: records, per shrink period */
  aoi__peak extra_peak; /* host only: extras, per shrink period */
} aoi__queue;

/* What record r of queue q changes: AOI__RECORD_* bits. */
static inline uint32_t aoi__record_what(const aoi__queue *q,
                                        const aoi__record *r)
{
  if (r->extra == AOI__RECORD_JUST_MOVE)
    return AOI__RECORD_MOVE;
  if (r->extra == AOI__RECORD_JUST_REMOVE)
    return AOI__RECORD_REMOVE;
  return q->extras[r->extra].what;
}

/* A watcher's view: the handles of the markers it sees, ordered by their
   ids (world->mark[h].id). Four bytes an entry: the position a watcher was
   last told is never stored, because every tick that computes a view tells
   each kept marker that moved (see aoi__mark.moved), so what the client
   knows is the position at the end of the last tick. A view held back by
   a failed tick is marked for a resync instead (AOI__STALE_RESYNC). */
typedef struct aoi__view {
  uint32_t *handles;
  uint32_t count, capacity;
} aoi__view;

/* With move bands (aoi_config.move_bands) a marker may be told late, so a
   view also keeps the position each marker was last told: x, y per entry
   in the order of the handles, in the same block after them (`told`
   says whether the world has bands). */
static inline float *aoi__view_told(const aoi__view *view, bool told)
{
  return told && view->handles != NULL
             ? (float *)(void *)(view->handles + view->capacity)
             : NULL;
}
static inline size_t aoi__view_bytes(uint32_t capacity, bool told)
{
  return (sizeof(uint32_t) + (told ? 2 * sizeof(float) : 0)) * capacity;
}

/* In an entity's flags, beside AOI_WATCHER and AOI_MARKER: a marker whose
   position changed this tick (its mark's `moved`), set by apply (and
   cleared by the exchange of a tick that does not touch it), for the grid
   to read in place; and one whose appeal is not 0 (the
   appeal itself is the world's, by handle: aoi_world.appeal). */
#define AOI__ENTITY_MOVED 0x80u
#define AOI__ENTITY_APPEAL 0x40u

/* An entity as its owning shard holds it: one cache line (the shard's
   array is aligned to one), so that a pass that meets it out of order
   reads one line. Tick stamps keep a tick's low 32 bits (aoi__stamp). */
typedef struct aoi__entity {
  uint64_t id;
  uint32_t handle;
  uint8_t flags; /* AOI_WATCHER | AOI_MARKER | AOI__ENTITY_* */
  uint8_t stale; /* AOI__STALE_* bits: the next compute starts from
                    scratch, and tells every kept marker (resync) */
  uint16_t spare;
  float x, y;
  float radius;
  uint32_t layers, interest;
  uint32_t cap;     /* as a watcher: the most markers it sees, 0 = all */
  uint32_t touched; /* the last tick whose ops moved or added it */
  uint32_t changed; /* the last tick whose ops changed it in any way */
  aoi__view view;
} aoi__entity;
_Static_assert(sizeof(aoi__entity) == 64, "an entity in a line");

/* A tick as an entity stamps it. */
static inline uint32_t aoi__stamp(uint64_t tick) { return (uint32_t)tick; }

#define AOI__STALE_WHOLE 1u  /* some enters were held back: scan next tick */
#define AOI__STALE_RESYNC 2u /* no events this tick: tell every kept one */
#define AOI__STALE_POLICY 4u /* compute again next tick, with the policies:
                                it sees a marker by its appeal, or was not
                                told every move (move bands) */

/* A read-only copy of a marker owned by another shard, or a departure. */
#define AOI__GHOST_CHANGED 1u  /* the marker changed this tick */
#define AOI__GHOST_DEPARTED 2u /* not a marker: where one stood, see grid */
#define AOI__GHOST_MOVED 4u    /* its position changed this tick */
#define AOI__GHOST_APPEAL 8u   /* its appeal is not 0 */
typedef struct aoi__ghost {
  uint64_t id;
  uint32_t handle, layers;
  float x, y;
  uint32_t shard; /* destination, in batches */
  uint32_t kind;  /* 0 or AOI__GHOST_* */
} aoi__ghost;

typedef struct aoi__handoff {
  uint32_t shard; /* destination */
  aoi__entity entity;
} aoi__handoff;

/* What any worker may read of any handle in the compute phase: where the
   entity is and, when it is a live marker, its layers (else 0, so no
   interest matches). Written only in the apply phase, by the worker whose
   shard applies the handle's ops; the exchange batches every worker waits
   for before computing order those writes before every read. */
typedef struct aoi__mark {
  /* the handle's id: written by the host at the add, kept until the handle
     is taken again (a removed one's leaves are delivered after its tick),
     and read wherever a view is ordered or an event told. It lies on the
     line of the position, so that delivery reads one line an event. */
  uint64_t id;
  float x, y;
  uint32_t layers;
  uint32_t moved; /* the last tick that changed x or y (aoi__stamp) */
} aoi__mark;

/* Where a handle lives: written only by its owning worker during a tick. */
typedef struct aoi__location {
  uint32_t shard, slot;
} aoi__location;

typedef struct aoi__shard {
  uint32_t index;
  aoi__ring *ops; /* host -> shard: &queue, once a tick */
  aoi__queue queue;
  aoi__entity *entities; /* on a line, within entity_block */
  void *entity_block;
  uint32_t count, capacity;
  aoi__ghost *ghosts;
  uint32_t ghost_count, ghost_capacity;
  uint32_t *touched; /* handles moved or added this tick */
  uint32_t touched_count, touched_capacity;
  aoi__ghost *departed; /* this tick's departures from here (owned ones) */
  uint32_t departed_count, departed_capacity;
  uint32_t ghost_markers; /* ghosts that are markers, not departures */
  /* The largest radius of a watcher this shard may hold in this tick's
     compute step, or -1 for none: written by its worker in the apply
     step (from radius_held, the watchers it adds or sets and those its
     worker hands to it), read by every worker in the exchange step, which
     sizes the ghosts sent here by it (exchange.c). */
  float reach_radius;
  /* Its worker's only: the largest radius of the watchers it held at the
     last exchange step (-1: none), of those that were not far-sighted
     by that tick's far_reach (far_held), and of all. */
  float radius_held, radius_held_all;
  double far_held;
  double ghost_reach; /* the last exchange step's (aoi_shard_info) */
  /* The last exchange step's count of its watchers that reach
     far_candidate, for the host's next far reach (tick.c). */
  uint32_t far_count;
  aoi__grid grid;
  aoi__grid fine;   /* for capped watchers, when there are any */
  /* Found by this tick's pass of publish_ghosts over the entities, for the
     grid (compute.c), so that it need not pass over them again: */
  uint32_t capped;    /* owned watchers with a cap */
  uint32_t unchanged; /* owned watchers neither changed nor stale */
  double box[4];      /* the owned entities' positions (x0, y0, x1, y1) */
  uint64_t compute_ns;
  /* Set when this tick's input to the shard is incomplete (a ghost could
     not be stored): its watchers keep their views and get no events. */
  bool degraded;
  /* Host only, reset every tick: an upper bound on what the apply phase
     will add to this shard, so the host can reserve it all before the
     tick: its records that add, plus the records elsewhere whose position
     names this shard. (The records bound its touched and departed.) */
  uint32_t arrivals_bound;
  aoi__peak entity_peak; /* host only: entities reserved, per period */
  aoi__peak ghost_peak;  /* host only: ghosts held, per period */
  char guard[AOI__LINE]; /* (AOI__LINE) */
} aoi__shard;

/* A batch of messages from one worker to another for one phase. */
typedef struct aoi__batch {
  uint32_t phase; /* AOI_PHASE_APPLY (handoffs) or AOI_PHASE_EXCHANGE */
  uint32_t count, capacity;
  bool incomplete; /* an item could not be stored: the receiver degrades */
  uint32_t bound;  /* host only: handoffs it may carry this tick */
  aoi__peak peak;  /* host only: items, per shrink period */
  void *items;     /* aoi__handoff or aoi__ghost */
} aoi__batch;

typedef struct aoi__tick_command {
  uint64_t tick;
  double ghost_reach; /* the largest per-axis distance at which a shard's
                         watchers may see a marker (query.c) */
  double cell_size;   /* grid cell side */
  double usual_reach; /* the mean radius, with the hysteresis */
  bool relayout;      /* the shard cuts moved: check every entity's shard */
  bool on_host;       /* one thread runs it whole (aoi__tick_on_host); the
                         tests read it */
  bool appeals;       /* some live entity has an appeal */
  bool departures;    /* enough live entities have no record that
                         departures pay (tick.c): they serve the
                         unchanged watchers (apply.c, compute.c) */
  double far_reach;   /* a watcher whose reach (radius plus hysteresis)
                         is at least this is far-sighted
                         (aoi__far_sighted); INFINITY: none is */
  double far_candidate; /* the far reach the crowd's box allows (tick.c):
                           far_reach unless too many watchers reach it */
  int shutdown;
} aoi__tick_command;

/* A marker a policy watcher could see: its key (the distance, less the
   hysteresis for a member), and how it was found. */
#define AOI__PICK_MEMBER 1u /* in the view of the last tick */
#define AOI__PICK_APPEAL 2u /* seen by its appeal, beyond the radius */
typedef struct aoi__pick {
  double key;
  uint64_t id;
  uint32_t handle;
  uint32_t how; /* AOI__PICK_* */
} aoi__pick;

/* A marker that enters a watcher's view this tick. */
typedef struct aoi__candidate {
  uint64_t id;
  uint32_t handle;
} aoi__candidate;

/* A quiet watcher (push.c): one that did not change, computed from the
   changes around it; the rest of what it needs is in its grid entry. */
typedef struct aoi__quiet {
  uint32_t slot, handle;
} aoi__quiet;

/* One event a change makes for a quiet watcher: its index and the kind
   (AOI__PUSH_*) in `qk`, the marker's handle and id. */
typedef struct aoi__push {
  uint64_t id;
  uint32_t qk, handle;
} aoi__push;

/* A worker: one lane, and its shards (shard s is worker s % threads's).
   Its fields are its own while a tick runs; the host reads the results
   after it. The scratch is grouped by the step of a tick that uses it
   (worker.c runs them in this order); delivery uses none of it: the
   events a worker makes are in its segment (aoi__segment). */
typedef struct aoi__worker {
  struct aoi_world *world;
  uint32_t index;
  aoi__task task; /* this lane's task of the step at hand (tick.c) */
  aoi__task deliver; /* its segment's delivery (aoi_deliver_many) */
  int deliver_rc;

  /* 1. apply (apply.c): the handoffs out, the watchers' radii handed off */
  aoi__batch *handoffs_out; /* one per peer worker */
  /* The apply step's radii of the watchers this worker handed to another
     worker's shards: reach_put[t] for each shard t of reach_to (-1 for
     the others), read by every worker in the exchange step. */
  float *reach_put;
  uint32_t *reach_to;
  uint32_t reach_to_count;

  /* 2. exchange (exchange.c): the ghosts out, and where each shard's go */
  aoi__batch *ghosts_out; /* one per peer worker */
  /* The exchange step's ghost reach of every shard (exchange.c): the
     per-axis distance within which a marker is ghosted there, or < 0 for
     a shard without watchers. The few shards whose reach is above
     near_reach (a far-sighted watcher's) are tested one by one: far[]. */
  double *ghost_reach;
  double near_reach;
  uint32_t far[AOI__FAR_SHARDS];
  unsigned far_count;

  /* 3. compute (compute.c, push.c, policy.c): one watcher at a time */
  uint64_t *work; /* the watchers to compute: slot, changes in reach << 32 */
  uint32_t work_capacity;
  /* The quiet watchers of the shard being computed and the events the
     changes make for them (push.c): pushes, then by watcher in `pushed`,
     those of quiet watcher q at push_start[q] .. push_start[q + 1]. */
  aoi__quiet *quiet;
  uint32_t quiet_count, quiet_capacity;
  aoi__push *pushes, *pushed;
  uint32_t push_count, push_capacity, pushed_capacity;
  uint32_t push_limit; /* beyond it, the quiet ones are listed instead */
  uint32_t *push_start, push_start_capacity;
  uint32_t push_watchers; /* quiet watchers with a push */
  uint8_t *push_kinds; /* quiet watcher q's kinds of push, a bit each */
  uint32_t push_kinds_capacity;
  uint32_t *pushed_done; /* the changes' handles, to clear their bits */
  uint32_t pushed_done_count, pushed_done_capacity;
  /* sizes of the views computed whole, this tick and the last */
  uint64_t view_sum, view_n, last_view_sum, last_view_n;
  aoi__candidate *candidates; /* candidate_capacity, then as many spare */
  uint32_t candidate_capacity;
  uint32_t *hits; /* a watcher's moves, before they follow its enters */
  uint32_t hit_capacity;
  uint64_t *met; /* the ids of the markers a plain scan kept, as met */
  uint32_t met_capacity;
  uint8_t *member; /* two bits a handle, a byte each (see reserve_members
                      in compute.c); all clear between watchers */
  uint32_t member_count;
  /* The policies' scratch. A pick is a marker a watcher could see. */
  struct aoi__pick *picks;
  uint32_t pick_capacity;
  /* The markers whose appeal reaches further than a watcher's radius,
     per watcher of the shard being computed: those of slot i are the
     grid entries appeal[appeal_start[i] .. appeal_start[i + 1]). */
  uint32_t *appeal_start, appeal_start_capacity;
  uint64_t *appeal_pairs; /* slot << 32 | entry, before the sort */
  uint32_t appeal_pair_capacity;
  uint32_t *appeal;
  uint32_t appeal_capacity;
  /* With move bands: where each handle of the view being computed lies
     in it, to find its told position from a grid hit; and the positions
     its kept markers are told this tick, applied once its events are
     stored: 3 words each (place, x, y). */
  uint32_t *told_at;
  uint32_t told_at_capacity;
  uint32_t *tells;
  uint32_t tell_capacity;

  /* view blocks (view.c): compute's views, and apply's removed watchers' */
  /* The free ones by capacity, each list linked through the blocks' first
     bytes; the chunk being carved; every chunk, linked through their
     first bytes. A view that grows, shrinks or goes (a removed watcher's)
     gives its block back here, for the next view of that capacity: a
     walking or churning crowd does not call the allocator. */
  void *view_free[AOI__VIEW_CLASSES];
  char *view_carve;
  size_t view_carve_left, view_chunk_bytes;
  void *view_chunks;

  /* 4. results, summed by aoi_tick_end (its events: world->segments[i]) */
  int error;              /* the first failure of the last tick */
  uint64_t phase_ns[AOI_PHASE_COUNT];
  uint64_t cpu_ns[AOI_PHASE_COUNT]; /* with measure_cpu, else 0 */
  uint64_t handoffs, ghosts, events_made;
  uint64_t lagging; /* watchers left with a marker not told where it is */
  char guard[AOI__LINE]; /* (AOI__LINE) */
} aoi__worker;

/* The host's record of a handle (its id is in its mark). */
#define AOI__LIVE 4u
/* world->handle_bits: in the backlog list; removed, and not taken again
   since (its record of the last tick, if any, is dead: aoi__segment); a
   new tag waits in tag_next for the next tick */
#define AOI__HANDLE_BACKLOG 1u
#define AOI__HANDLE_GONE 2u
#define AOI__HANDLE_TAG 4u
typedef struct aoi__host_entity {
  uint64_t born;  /* the tick that first applies it */
  float radius;
  float appeal;
  uint32_t flags; /* AOI_WATCHER | AOI_MARKER | AOI__LIVE */
  uint32_t shard; /* where its ops go until `born` has been applied */
} aoi__host_entity;

/* One coordinate of a sampled entity and the work it stands for. */
typedef struct aoi__sample {
  float v;
  uint32_t weight;
} aoi__sample;

/* A planned move of the shard cuts (rebalance.c), host only. */
typedef struct aoi__plan {
  double *xcut, *ycut;  /* the new cuts */
  uint32_t *arrivals;   /* per shard: entities that will move in */
  uint32_t *bound;      /* per worker pair: handoffs between them */
  struct aoi__sample *xs, *ys; /* sampled coordinates, weighted */
  uint32_t xs_capacity, ys_capacity;
} aoi__plan;

/* One move of a batch spread over the pool (submit.c): its handle and the
   shard whose queue gets its record. */
typedef struct aoi__spread_move {
  uint32_t handle, shard;
} aoi__spread_move;

/* A view queued for a watcher (transfer.c): the next tick's apply step of
   `shard` puts it in place of the watcher's view. */
typedef struct aoi__install {
  uint32_t handle;
  uint32_t shard;
  bool adopted; /* put in place, or given back */
  aoi__view view;
} aoi__install;

struct aoi_world {
  aoi_config config;
  /* Per move band b: the least dx^2 + dy^2 whose square root is above the
     band's distance (aoi__tell_move_at compares without a root). */
  double band_above[AOI_MAX_MOVE_BANDS];
  aoi_allocator allocator;
  aoi__shape shape;
  unsigned threads, shard_count;
  aoi__layout layout;
  aoi__worker *workers;
  aoi__shard *shards;
  aoi__ring **peer; /* peer[from * threads + to] */
  aoi__tick_command command;

  /* Where its ticks run (tick.c): its pool (NULL for AOI_RUN_CALLER),
     its own or shared; the task that starts a tick on the pool; the job
     the host waits on for a tick in flight (`solo`, or aoi_tick_many's);
     the tick's result. aoi_tick_many reads these of every world, with
     in_flight and delivering, so they share a cache line. */
  struct {
    struct aoi_pool *pool;
    aoi__task start;
    aoi__job *job;
    int tick_rc;
    bool in_flight; /* between aoi_tick_begin and aoi_tick_end */
    bool listed;    /* seen in this aoi_tick_many's list */
    bool own_pool;
    /* aoi_deliver calls running now, on any thread: every other call is
       refused while it is not 0 (aoi__busy). */
    atomic_uint delivering;
    uint64_t tick;
    uint32_t records;          /* queued in all shards */
    uint32_t tag_queued_count; /* (tag_queued, below) */
    /* Its ticks change nothing but the tick count while nothing is
       submitted (tick.c, quiet_tick). */
    bool quiet;
    bool quieted; /* its tick in aoi_tick_many was quiet_tick's */
  };
  uint32_t quiet_ticks; /* ticks in a row that were skipped, empty */
  aoi__job solo;
  /* aoi_deliver_many's callbacks and job, while it runs */
  aoi_deliver_fn deliver_fn;
  aoi_deliver_slots_fn deliver_slots; /* or NULL for aoi_deliver */
  void *deliver_user;
  aoi__job *deliver_job;
  /* the step the lanes are at, and how many have yet to finish it */
  uint32_t step;
  _Atomic uint32_t lanes_left;
  /* With measure_cpu: the thread's CPU clock at the tick's start, and the
     CPU time before and after the steps (all of it, for a tick one
     thread ran whole) */
  uint64_t cpu_mark, serial_cpu_ns;

  /* host side */
  aoi__idmap ids;
  aoi__host_entity *host; /* first of the per-handle tables, one block */
  uint32_t handle_capacity, handle_count; /* high-water mark */
  aoi__location *location;                /* per handle */
  aoi__mark *mark;                        /* per handle */
  float *appeal; /* per handle: a live marker's appeal, else 0; written
                    and read like the marks */
  aoi__outbox *outbox;                    /* per handle: the backlog */
  /* per handle, see aoi__segment: while records_indexed, 1 + where this
     tick's record of each watcher that has one lies; else all 0 */
  uint32_t *event_at;
  uint8_t *handle_bits; /* per handle: AOI__HANDLE_* */
  uint32_t *queued;        /* per handle: its record's index in the queue
                              of the shard route() names, or AOI__NONE */
  uint32_t *generation;    /* per handle: the generation of its live
                              entity's aoi_ref, bumped when the entity is
                              removed; 0 once retired (submit.c) */
  /* Per handle: the host's tag (aoi_entity), as of the last tick, which
     delivery hands out; the one aoi_set_tag gave since, for the next tick
     (tick.c), the handles that have one listed in tag_queued. */
  uint64_t *tag, *tag_next;
  uint32_t *tag_queued;
  /* Views queued by aoi__view_install for the next tick (transfer.c). */
  aoi__install *installs;
  uint32_t install_count, install_capacity;
  uint64_t ref_key;        /* this world's key for its references (odd) */
  uint64_t ref_inverse;    /* ref_key's inverse modulo 2^64 */
  /* Released handles, one ring of handle_capacity (no handle is in it
     twice, so it never fills): from released_head, the free ones
     (free_count), then those removed before the last tick (limbo_old:
     free after this tick, once its leaves were delivered), then those
     removed before this one (limbo). A tick moves both boundaries at once;
     take_handle and a cancelled add work at the head (submit.c). */
  uint32_t *released;
  uint32_t released_head;
  uint32_t free_count, limbo_old_count, limbo_count;
  aoi__segment *segments;  /* one per worker */
  uint32_t *backlog;       /* per handle: watchers whose outbox holds events */
  uint32_t backlog_count;
  uint32_t *assigned;      /* per handle: the segments' backlog lists */
  aoi__pending pending;
  bool records_indexed;   /* event_at holds the records (outbox.c) */
  uint64_t tick_started;  /* when the tick in flight began */
  bool skipped;           /* it had nothing to do (tick_ns 0) */
  bool views_held;        /* the last tick held some views back */
  bool lagging;           /* the last tick left a move untold (bands) */
  /* A tick runs on the thread that starts it when its cost is at most
     inline_cost, or when that thread would only wait for its one lane and
     inline_single is set; a blocking tick of more lanes runs lane 0's
     first step on the host thread when host_share is set (tick.c).
     World.c sets them; tests change them. */
  uint64_t inline_cost;
  bool inline_single, host_share;
  uint64_t live, watchers;
  float radius_high; /* >= every live watcher's radius */
  float appeal_high; /* >= every live entity's appeal */
  bool appeal_high_dirty;
  double radius_sum;  /* of the live watchers' radii, for the cell size */
  bool radius_high_dirty;
  double last_ghost_reach;
  double last_far_candidate; /* the last tick's, INFINITY before any */
  uint64_t *query_ids;
  uint32_t query_capacity;
  aoi__plan plan;
  /* aoi_move_many's scratch for a batch spread over the pool (submit.c):
     each move's handle and shard, at most one window of moves (the handle
     capacity's worth); per part of the batch, the records it would make
     in each shard. */
  aoi__spread_move *spread_moves;
  uint32_t spread_capacity;
  uint32_t *spread_fresh;
  uint32_t spread_fresh_capacity;
  uint32_t *spread_seen; /* per handle, the window and part that met it */
  uint32_t spread_seen_capacity, spread_stamp;

  /* stats of the last tick */
  aoi_stats stats;
  uint32_t *shard_entities;
  uint64_t *shard_ns;
};

#endif /* AOI_TYPES_H */
