/*
 * aoi_mpi.h: one world across processes over MPI (build with
 * -DAOI_MPI=ON; link aoi::aoi_mpi). docs/distributed.md explains the
 * design, what a host does on a transfer and how a cluster runs.
 *
 * The map is cut into one vertical strip per rank of the communicator,
 * between the config's min_x and max_x at first (the first and last
 * strips reach to the infinities); the cuts follow the load
 * (aoi_mpi_config.rebalance_interval). Each rank owns the entities standing in its strip
 * and runs them in a world of its own (its threads and shards as the
 * config says), together with ghosts: copies of the entities of other
 * ranks that stand within max_radius + hysteresis of its strip. Every
 * tick, each rank sends each other rank one message with what changed
 * among the entities that rank must hold; an entity that moves into
 * another rank's strip is transferred there, with its view. The events
 * every rank delivers, together, are exactly those one world would
 * deliver, at every rank, thread and shard count.
 *
 * Contract:
 * - Every rank creates the world with the same config, ticks it the same
 *   number of times (aoi_mpi_tick is collective) and destroys it.
 * - A rank submits operations only for the entities it owns
 *   (aoi_mpi_owns) and adds only at positions in its strip
 *   (aoi_mpi_rank_of); anything else is refused with AOI_EREMOTE and
 *   changes nothing.
 * - Ids are unique across ranks. An add of an id this rank holds as a
 *   ghost is taken as that id's re-add after its owner removed it.
 * - After each tick the host delivers its owned watchers' events
 *   (aoi_mpi_deliver) and reads the transfers (aoi_mpi_transfers): an
 *   entity transferred out is no longer this rank's from the next
 *   operation on; one transferred in is.
 * - A failed tick (AOI_EPEER: a peer died, did not answer within the
 *   config's timeout, or sent a message that does not decode) leaves the
 *   world unusable: destroy it, and restart from the host's own state.
 */
#ifndef AOI_MPI_H
#define AOI_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "aoi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aoi_mpi_world aoi_mpi_world;

/* A distributed world's settings beside its aoi_config. */
typedef struct aoi_mpi_config {
  /* How long a tick waits for its peers before it fails with AOI_EPEER,
     in milliseconds (default 10000). */
  unsigned timeout_ms;
  /* Every this many ticks, the ranks weigh their entities and, when one
     owns over 1.25x the mean, move the strips' cuts to the quantiles of
     the entities' x; 0 = never. Default 16. The events are the same
     either way. */
  unsigned rebalance_interval;
} aoi_mpi_config;

AOI_EXPORT void aoi_mpi_config_default(aoi_mpi_config *mpi);

/* Creates this rank's part of a world over `comm` (duplicated; every
   rank of it calls this with the same config). `mpi` may be NULL for the
   defaults. The config's run must be AOI_RUN_OWN or AOI_RUN_CALLER.
   Errors: AOI_EINVAL, AOI_ENOMEM, AOI_ESYS, AOI_EPEER (the ranks' configs
   differ). Collective. */
AOI_EXPORT int aoi_mpi_create(const aoi_config *config,
                              const aoi_mpi_config *mpi, MPI_Comm comm,
                              aoi_mpi_world **out);
/* Frees this rank's part (not collective). 0, also for NULL. */
AOI_EXPORT int aoi_mpi_destroy(aoi_mpi_world *world);

/* This rank and the number of ranks. */
AOI_EXPORT int aoi_mpi_rank(const aoi_mpi_world *world);
AOI_EXPORT int aoi_mpi_ranks(const aoi_mpi_world *world);
/* The rank whose strip holds (x, y); -1 for a coordinate that is not
   finite or a NULL world. */
AOI_EXPORT int aoi_mpi_rank_of(const aoi_mpi_world *world, float x, float y);
/* 1 when this rank owns live entity `id` (as submitted so far), else 0. */
AOI_EXPORT int aoi_mpi_owns(const aoi_mpi_world *world, uint64_t id);

/* The operations of aoi.h, for entities this rank owns: the same checks
   in the same order, then AOI_EREMOTE for an id another rank owns (this
   rank holds it as a ghost) or an add outside this rank's strip. An id
   this rank does not hold at all is AOI_ENOENT. */
AOI_EXPORT int aoi_mpi_add(aoi_mpi_world *world, const aoi_entity *entity);
AOI_EXPORT int aoi_mpi_move(aoi_mpi_world *world, uint64_t id, float x,
                            float y);
AOI_EXPORT int aoi_mpi_set_radius(aoi_mpi_world *world, uint64_t id,
                                  float radius);
AOI_EXPORT int aoi_mpi_set_layers(aoi_mpi_world *world, uint64_t id,
                                  uint32_t layers, uint32_t interest);
AOI_EXPORT int aoi_mpi_set_appeal(aoi_mpi_world *world, uint64_t id,
                                  float appeal);
AOI_EXPORT int aoi_mpi_set_cap(aoi_mpi_world *world, uint64_t id,
                               uint32_t cap);
AOI_EXPORT int aoi_mpi_set_tag(aoi_mpi_world *world, uint64_t id,
                               uint64_t tag);
AOI_EXPORT int aoi_mpi_remove(aoi_mpi_world *world, uint64_t id);

/* Ticks every rank's part: sends the changes to the peers, takes theirs,
   ticks the local world and keeps the events of the watchers this rank
   owns for aoi_mpi_deliver (the last tick's undelivered events are
   dropped). Collective. Errors: AOI_ENOMEM, AOI_ESYS, AOI_EPEER; then
   the world is unusable (aoi_mpi_destroy it). */
AOI_EXPORT int aoi_mpi_tick(aoi_mpi_world *world);

/* Calls fn once per watcher this rank owns that has events of the last
   tick, as aoi_deliver does (segment by segment, on the calling thread),
   and empties them. AOI_ENOMEM when a watcher that crossed at the last
   tick could not have its events merged (they are lost); AOI_EPEER after
   a failed tick. */
AOI_EXPORT int aoi_mpi_deliver(aoi_mpi_world *world, aoi_deliver_fn fn,
                               void *user);

/* The entities that changed owner at the last tick, as this rank sees
   them: `in` is 1 for one now this rank's (`rank` the old owner), 0 for
   one now `rank`'s. Ids ascending, outs first. */
typedef void (*aoi_mpi_transfer_fn)(void *user, uint64_t id, uint64_t tag,
                                    int rank, int in);
AOI_EXPORT int aoi_mpi_transfers(aoi_mpi_world *world, aoi_mpi_transfer_fn fn,
                                 void *user);

/* What the last tick sent: messages with at least one record, their
   records (ghosts, ghost moves and drops, removals, transfers), the bytes
   on the wire, and the time it waited on its peers. */
typedef struct aoi_mpi_stats {
  uint64_t messages, records, bytes;
  uint64_t wait_ns;
  uint64_t transfers_out, transfers_in;
  uint64_t owned, ghosts; /* entities this rank holds after the tick */
  uint64_t rebalances;     /* times the cuts moved, since the start */
} aoi_mpi_stats;
AOI_EXPORT int aoi_mpi_stats_get(const aoi_mpi_world *world,
                                 aoi_mpi_stats *stats);

/* This rank's local world, for the queries of aoi.h: it holds the
   entities this rank owns and its ghosts. aoi_view of an owned watcher
   answers as one world would, and aoi_query_circle for a circle inside
   the strip widened by the band; aoi_watchers_of is exact for the
   watchers this rank owns only (docs/distributed.md). Never submit to it
   or tick it. */
AOI_EXPORT aoi_world *aoi_mpi_local(aoi_mpi_world *world);

#ifdef __cplusplus
}
#endif

#endif /* AOI_MPI_H */
