/*
 * worker.c: the worker threads, the batches they exchange, and the order of
 * a tick's steps; the steps themselves are the next files down.
 *
 * A worker sleeps on its bell until the host pushes a tick command onto its
 * control ring. Then, for its shards (shard i belongs to worker
 * i % threads), it runs the three steps of a tick:
 *
 *  1. Apply (apply.c): take each shard's queue from its op ring and apply
 *     its records; hand off every entity that now lies in another shard.
 *     Each worker then pushes exactly one handoff batch (maybe empty) to
 *     every peer and takes exactly one from every peer.
 *  2. Exchange (exchange.c): copy every owned marker within ghost reach of
 *     another shard there as a ghost, and every departure to the shards
 *     near where it stood, again with one batch per peer.
 *  3. Compute (compute.c, with policy.c and view.c): index each shard's
 *     entities, ghosts and departures in a grid, and compute the new view
 *     and the events of every watcher with something to compute.
 *
 * Batches are owned by their producer and reused every tick; the consumer is
 * done with one before it reports the tick done, and the host starts the
 * next tick only after every worker has, so reuse never races. Each ring is
 * FIFO and carries one handoff batch then one ghost batch per tick, so a
 * consumer that takes exactly one message per peer per phase never confuses
 * phases. No phase needs a barrier: the batches are the synchronisation.
 *
 * A small tick is run by the host thread instead (aoi__tick_on_host), with
 * the same code and the same rings: each step for every worker in turn,
 * while the worker threads sleep. In a blocking tick (aoi_tick) the host
 * thread runs worker 0's share itself (aoi__tick_share) while the others
 * run theirs: it would only wait for them, and one thread fewer is woken.
 * A worker waits for its peers' batches on its peer bell, and for a
 * command on its own bell, so that worker 0's thread sleeps on while the
 * host runs its share.
 *
 * This file also frees what a worker and a shard hold (aoi_destroy).
 */
#include "internal.h"

#include <string.h>

void aoi__shard_free(const aoi_allocator *a, aoi__shard *s, bool told)
{
  /* the views in workers' chunks go with them (aoi__view_chunks_free) */
  for (uint32_t i = 0; i < s->count; i++)
    aoi__view_free(a, &s->entities[i].view, told);
  aoi__free_lined(a, s->entity_block, s->capacity, sizeof(aoi__entity));
  aoi__free(a, s->ghosts, sizeof(aoi__ghost) * s->ghost_capacity);
  aoi__free(a, s->touched, sizeof(uint32_t) * s->touched_capacity);
  aoi__free(a, s->departed, sizeof(aoi__ghost) * s->departed_capacity);
  aoi__grid_free(a, &s->grid);
  aoi__grid_free(a, &s->fine);
  aoi__ring_destroy(a, s->ops);
  memset(s, 0, sizeof(*s));
}

void aoi__worker_free(const aoi_allocator *a, aoi__worker *workers,
                      unsigned threads, unsigned shards)
{
  for (unsigned i = 0; i < threads; i++) {
    aoi__worker *k = &workers[i];
    aoi__ring_destroy(a, k->control);
    aoi__ring_destroy(a, k->done);
    if (k->handoffs_out != NULL)
      for (unsigned j = 0; j < threads; j++)
        aoi__free(a, k->handoffs_out[j].items,
                  sizeof(aoi__handoff) * k->handoffs_out[j].capacity);
    if (k->ghosts_out != NULL)
      for (unsigned j = 0; j < threads; j++)
        aoi__free(a, k->ghosts_out[j].items,
                  sizeof(aoi__ghost) * k->ghosts_out[j].capacity);
    aoi__free(a, k->handoffs_out, sizeof(aoi__batch) * threads);
    aoi__free(a, k->ghosts_out, sizeof(aoi__batch) * threads);
    aoi__free(a, k->reach_put, sizeof(float) * shards);
    aoi__free(a, k->reach_to, sizeof(uint32_t) * shards);
    aoi__free(a, k->ghost_reach, sizeof(double) * shards);
    aoi__free(a, k->candidates,
              sizeof(aoi__candidate) * 2 * (size_t)k->candidate_capacity);
    aoi__free(a, k->hits, sizeof(uint32_t) * k->hit_capacity);
    aoi__free(a, k->met, sizeof(uint64_t) * k->met_capacity);
    aoi__free(a, k->work, sizeof(uint64_t) * k->work_capacity);
    aoi__free(a, k->quiet, sizeof(aoi__quiet) * k->quiet_capacity);
    aoi__free(a, k->pushes, sizeof(aoi__push) * k->push_capacity);
    aoi__free(a, k->pushed, sizeof(aoi__push) * k->pushed_capacity);
    aoi__free(a, k->push_start, sizeof(uint32_t) * k->push_start_capacity);
    aoi__free(a, k->push_kinds, k->push_kinds_capacity);
    aoi__free(a, k->pushed_done, sizeof(uint32_t) * k->pushed_done_capacity);
    aoi__free(a, k->member, k->member_count);
    aoi__free(a, k->picks, sizeof(aoi__pick) * k->pick_capacity);
    aoi__free(a, k->appeal_start, sizeof(uint32_t) * k->appeal_start_capacity);
    aoi__free(a, k->appeal_pairs, sizeof(uint64_t) * k->appeal_pair_capacity);
    aoi__free(a, k->appeal, sizeof(uint32_t) * k->appeal_capacity);
    aoi__free(a, k->told_at, sizeof(uint32_t) * k->told_at_capacity);
    if (k->world != NULL)
      aoi__view_chunks_free(k);
    aoi__free(a, k->tells, sizeof(uint32_t) * k->tell_capacity);
    if (k->world != NULL) {
      aoi__bell_destroy(&k->bell);
      aoi__bell_destroy(&k->peer_bell);
    }
  }
}

/* ---- batches between workers -------------------------------------------- */

/* Pushes this worker's batch for `phase` to every peer. */
static void send_batches(aoi__worker *k, aoi__batch *out, uint32_t phase)
{
  aoi_world *w = k->world;
  for (unsigned j = 0; j < w->threads; j++) {
    if (j == k->index)
      continue;
    out[j].phase = phase;
    aoi__ring *ring = w->peer[k->index * w->threads + j];
    /* The ring holds 7 and at most 2 are ever in flight. */
    while (aoi__ring_push(ring, &out[j]) != 0)
      ;
    if (!w->command.on_host) /* else the peer sleeps on, and nobody waits */
      aoi__bell_ring(&w->workers[j].peer_bell);
  }
}

typedef void (*batch_handler)(aoi__worker *k, const aoi__batch *b);

/* Takes exactly one batch from every peer, in whatever order they come. */
static void receive_batches(aoi__worker *k, uint32_t phase,
                            batch_handler handle)
{
  aoi_world *w = k->world;
  bool have[AOI__MAX_THREADS] = {false};
  unsigned got = 0;
  while (got + 1 < w->threads) {
    uint32_t seen = aoi__bell_read(&k->peer_bell);
    bool progress = false;
    for (unsigned i = 0; i < w->threads; i++) {
      if (i == k->index || have[i])
        continue;
      aoi__batch *b = aoi__ring_pop(w->peer[i * w->threads + k->index]);
      if (b == NULL)
        continue;
      AOI__ASSERT(b->phase == phase);
      if (b->phase != phase)
        aoi__fail(k, AOI_EINVAL); /* cannot happen: rings are FIFO */
      handle(k, b);
      have[i] = true;
      got++;
      progress = true;
    }
    if (!progress)
      aoi__bell_wait(&k->peer_bell, seen);
  }
}

/* ---- the tick ----------------------------------------------------------- */

/* A tick is three steps, each ending with the batches it sends to every
   peer: apply (and hand off), exchange (after taking the handoffs), and
   compute (after taking the ghosts). A worker runs them one after another,
   waiting for its peers' batches at the start of the second and the third.
   The host runs a small tick itself (aoi__tick_on_host): each step for
   every worker in turn, so every batch a step takes was sent by the step
   before, and nobody waits. */
static void tick_apply(aoi__worker *k, const aoi__tick_command *cmd)
{
  aoi_world *w = k->world;
  k->error = 0;
  k->handoffs = k->ghosts = k->events_made = k->lagging = 0;
  for (unsigned j = 0; j < w->threads; j++) {
    k->handoffs_out[j].count = k->ghosts_out[j].count = 0;
    k->handoffs_out[j].incomplete = k->ghosts_out[j].incomplete = false;
  }
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    w->shards[s].degraded = false;
  for (uint32_t i = 0; i < k->reach_to_count; i++)
    k->reach_put[k->reach_to[i]] = -1;
  k->reach_to_count = 0;

  k->phase_started = aoi__now_ns();
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    aoi__apply_ops(k, &w->shards[s], cmd->tick, cmd->departures);
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    aoi__find_handoffs(k, &w->shards[s], cmd->relayout, cmd->tick);
  send_batches(k, k->handoffs_out, AOI_PHASE_APPLY);
}

static void tick_exchange(aoi__worker *k, const aoi__tick_command *cmd)
{
  aoi_world *w = k->world;
  receive_batches(k, AOI_PHASE_APPLY, aoi__take_handoffs);

  uint64_t t1 = aoi__now_ns();
  k->phase_ns[AOI_PHASE_APPLY] = t1 - k->phase_started;
  k->phase_started = t1;
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    w->shards[s].ghost_count = w->shards[s].ghost_markers = 0;
  aoi__ghost_reaches(k);
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    aoi__publish_ghosts(k, &w->shards[s], cmd->tick);
  send_batches(k, k->ghosts_out, AOI_PHASE_EXCHANGE);
}

static void tick_compute(aoi__worker *k, const aoi__tick_command *cmd)
{
  aoi_world *w = k->world;
  receive_batches(k, AOI_PHASE_EXCHANGE, aoi__take_ghosts);

  uint64_t t2 = aoi__now_ns();
  k->last_view_sum = k->view_sum;
  k->last_view_n = k->view_n;
  k->view_sum = k->view_n = 0;
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    aoi__compute_shard(k, &w->shards[s], cmd);
  uint64_t t3 = aoi__now_ns();
  k->phase_ns[AOI_PHASE_EXCHANGE] = t2 - k->phase_started;
  k->phase_ns[AOI_PHASE_COMPUTE] = t3 - t2;
}

static void run_tick(aoi__worker *k, const aoi__tick_command *cmd)
{
  tick_apply(k, cmd);
  tick_exchange(k, cmd);
  tick_compute(k, cmd);
}

void aoi__tick_share(aoi_world *w, const aoi__tick_command *cmd)
{
  run_tick(&w->workers[0], cmd);
}

void aoi__tick_on_host(aoi_world *w, const aoi__tick_command *cmd)
{
  for (unsigned i = 0; i < w->threads; i++)
    tick_apply(&w->workers[i], cmd);
  for (unsigned i = 0; i < w->threads; i++)
    tick_exchange(&w->workers[i], cmd);
  for (unsigned i = 0; i < w->threads; i++)
    tick_compute(&w->workers[i], cmd);
}

void *aoi__worker_main(void *arg)
{
  aoi__worker *k = arg;
  aoi_world *w = k->world;
  for (;;) {
    uint32_t seen = aoi__bell_read(&k->bell);
    const aoi__tick_command *cmd = aoi__ring_pop(k->control);
    if (cmd == NULL) {
      aoi__bell_wait_for(&k->bell, seen, w->idle_spin_ns);
      continue;
    }
    if (cmd->shutdown)
      break;
    run_tick(k, cmd);
    while (aoi__ring_push(k->done, k) != 0)
      ; /* holds 3; at most one report is ever in flight */
    aoi__bell_ring(&w->host_bell);
  }
  return NULL;
}
