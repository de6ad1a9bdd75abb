/* A user's program against the installed aoi: one watcher sees one NPC,
   and the header matches the library it linked. */
#include <aoi.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
  if (aoi_version() != AOI_VERSION) {
    fprintf(stderr, "header %d, library %u\n", AOI_VERSION, aoi_version());
    return 1;
  }
  aoi_config config;
  aoi_config_default(&config);
  config.threads = 2;
  aoi_world *world;
  if (aoi_create(&config, &world) != 0)
    return 1;
  aoi_entity watcher = {.id = 1, .x = 10, .y = 10, .radius = 50,
                        .flags = AOI_WATCHER | AOI_MARKER,
                        .layers = AOI_ALL_LAYERS, .interest = AOI_ALL_LAYERS};
  aoi_entity npc = {.id = 2, .tag = 42, .x = 30, .y = 10,
                    .flags = AOI_MARKER, .layers = AOI_ALL_LAYERS};
  if (aoi_add(world, &watcher) != 0 || aoi_add(world, &npc) != 0 ||
      aoi_tick(world) != 0)
    return 1;
  const aoi_event *events;
  size_t count;
  if (aoi_drain(world, 1, &events, &count) != 0 || count != 1 ||
      events[0].kind != AOI_ENTER || events[0].id != 2 ||
      events[0].tag != 42)
    return 1;
  printf("aoi %s: watcher 1 saw %llu enter\n", aoi_version_string(),
         (unsigned long long)events[0].id);
  return aoi_destroy(world) == 0 ? 0 : 1;
}
