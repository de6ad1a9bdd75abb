/* minimal.c: two players and an NPC; events reach a player by its tag. */
#include <aoi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call) do { int rc = (call); if (rc != 0) { fprintf(stderr, \
    "%s: %s\n", #call, aoi_strerror(rc)); exit(1); } } while (0)
static struct connection { const char *name; } players[] = {{"alice"}, {"bob"}};

static void send_events(void *out, uint64_t watcher, uint64_t watcher_tag,
                        const aoi_event *ev, size_t count)
{
  const struct connection *to = (void *)(uintptr_t)watcher_tag; /* no lookup */
  for (size_t i = 0; i < count; i++)
    fprintf(out, "%s (%" PRIu64 "): %s %" PRIu64 "\n", to->name, watcher,
            (const char *[]){"leave", "enter", "move"}[ev[i].kind], ev[i].id);
}

int main(void)
{
  aoi_config config;
  aoi_config_default(&config); /* a worker thread per core, circle views */
  aoi_world *world;
  CHECK(aoi_create(&config, &world));
  for (int i = 0; i < 2; i++) /* alice at (10, 10), bob at (90, 10) */
    CHECK(aoi_add(world, &(aoi_entity){.id = i + 1, .x = 10 + 80 * i, .y = 10,
          .tag = (uintptr_t)&players[i], .radius = 50, .flags = AOI_WATCHER |
          AOI_MARKER, .layers = AOI_ALL_LAYERS, .interest = AOI_ALL_LAYERS}));
  CHECK(aoi_add(world, &(aoi_entity){.id = 100, .x = 30, .y = 12,
        .flags = AOI_MARKER, .layers = AOI_ALL_LAYERS})); /* an NPC */
  for (int frame = 0; frame < 2; frame++) { /* the game loop */
    CHECK(aoi_move(world, 2, 55 - 10.0f * frame, 10)); /* bob walks */
    CHECK(aoi_tick(world));
    for (unsigned s = 0; s < aoi_delivery_segments(world); s++)
      CHECK(aoi_deliver(world, s, send_events, stdout));
  }
  CHECK(aoi_destroy(world));
  return 0;
}
