/*
 * worker.c: a lane's steps of a tick, and the batches lanes exchange; the
 * steps themselves are the next files down. Which thread runs a step, and
 * when, is tick.c's: a lane is not a thread (docs/design.md, "Pools").
 *
 * For its shards (shard i belongs to lane i % threads), a lane runs the
 * three steps of a tick, each once every lane has finished the one
 * before:
 *
 *  1. Apply (apply.c): take each shard's queue from its op ring and apply
 *     its records; hand off every entity that now lies in another shard.
 *     Each lane then pushes exactly one handoff batch (maybe empty) to
 *     every peer, and takes exactly one from every peer at the start of
 *     the next step.
 *  2. Exchange (exchange.c): copy every owned marker within ghost reach of
 *     another shard there as a ghost, and every departure to the shards
 *     near where it stood, again with one batch per peer.
 *  3. Compute (compute.c, with policy.c and view.c): index each shard's
 *     entities, ghosts and departures in a grid, and compute the new view
 *     and the events of every watcher with something to compute.
 *
 * Batches are owned by their producer and reused every tick; the consumer
 * is done with one before its step ends, and the next tick starts only
 * after every lane's last step, so reuse never races. Each ring is FIFO
 * and carries one handoff batch then one ghost batch per tick, and a
 * step starts only after every lane sent its batches for it, so a lane
 * that takes exactly one message per peer per step never waits and never
 * confuses steps.
 *
 * A small tick is run by one thread (aoi__tick_on_host), with the same
 * code and the same rings: each step for every lane in turn.
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
  }
}

/* ---- batches between lanes --------------------------------------------- */

/* Pushes this lane's batch for `phase` to every peer. */
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
  }
}

typedef void (*batch_handler)(aoi__worker *k, const aoi__batch *b);

/* Takes exactly one batch from every peer: each sent it in the step
   before, which every lane finished. */
static void receive_batches(aoi__worker *k, uint32_t phase,
                            batch_handler handle)
{
  aoi_world *w = k->world;
  for (unsigned i = 0; i < w->threads; i++) {
    if (i == k->index)
      continue;
    aoi__batch *b = aoi__ring_pop(w->peer[i * w->threads + k->index]);
    AOI__ASSERT(b != NULL && b->phase == phase);
    if (b == NULL || b->phase != phase) {
      aoi__fail(k, AOI_EINVAL); /* cannot happen: rings are FIFO */
      continue;
    }
    handle(k, b);
  }
}

/* ---- the steps ---------------------------------------------------------- */

/* A tick is three steps, each ending with the batches it sends to every
   peer: apply (and hand off), exchange (after taking the handoffs), and
   compute (after taking the ghosts). */
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

  for (unsigned s = k->index; s < w->shard_count; s += w->threads) {
    aoi__apply_ops(k, &w->shards[s], cmd->tick, cmd->departures);
    if (w->install_count > 0)
      aoi__adopt_installs(k, &w->shards[s], cmd->tick);
  }
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    aoi__find_handoffs(k, &w->shards[s], cmd->relayout, cmd->tick);
  send_batches(k, k->handoffs_out, AOI_PHASE_APPLY);
}

static void tick_exchange(aoi__worker *k, const aoi__tick_command *cmd)
{
  aoi_world *w = k->world;
  receive_batches(k, AOI_PHASE_APPLY, aoi__take_handoffs);
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
  k->last_view_sum = k->view_sum;
  k->last_view_n = k->view_n;
  k->view_sum = k->view_n = 0;
  for (unsigned s = k->index; s < w->shard_count; s += w->threads)
    aoi__compute_shard(k, &w->shards[s], cmd);
}

void aoi__lane_step(aoi__worker *k, uint32_t step,
                    const aoi__tick_command *cmd, bool cpu)
{
  uint64_t c0 = cpu ? aoi__cpu_ns() : 0;
  uint64_t t0 = aoi__now_ns();
  switch (step) {
  case AOI_PHASE_APPLY:
    tick_apply(k, cmd);
    break;
  case AOI_PHASE_EXCHANGE:
    tick_exchange(k, cmd);
    break;
  default:
    AOI__ASSERT(step == AOI_PHASE_COMPUTE);
    tick_compute(k, cmd);
    break;
  }
  k->phase_ns[step] = aoi__now_ns() - t0;
  k->cpu_ns[step] = cpu ? aoi__cpu_ns() - c0 : 0;
}

void aoi__tick_on_host(aoi_world *w, const aoi__tick_command *cmd)
{
  /* One thread runs it all: its CPU time is timed once, by the caller
     (tick.c), and counts as serial. */
  for (uint32_t step = 0; step < AOI_PHASE_COUNT; step++)
    for (unsigned i = 0; i < w->threads; i++)
      aoi__lane_step(&w->workers[i], step, cmd, false);
}
