/*
 * layout.c: prints the sizes and field offsets of the structs the C#
 * binding mirrors (Aoi.cs), one "name value" a line, for Tests.cs to
 * compare with its own. Built and run by test.sh.
 */
#include <stddef.h>
#include <stdio.h>

#include "aoi.h"

#define SHOW(name, value) printf("%s %zu\n", name, (size_t)(value))

int main(void)
{
  SHOW("config.size", sizeof(aoi_config));
  SHOW("config.pool", offsetof(aoi_config, pool));
  SHOW("config.threads", offsetof(aoi_config, threads));
  SHOW("config.min_x", offsetof(aoi_config, min_x));
  SHOW("config.max_radius", offsetof(aoi_config, max_radius));
  SHOW("config.move_events", offsetof(aoi_config, move_events));
  SHOW("config.cell_size", offsetof(aoi_config, cell_size));
  SHOW("config.move_bands", offsetof(aoi_config, move_bands));
  SHOW("config.move_band_count", offsetof(aoi_config, move_band_count));
  SHOW("config.measure_cpu", offsetof(aoi_config, measure_cpu));
  SHOW("config.allocator", offsetof(aoi_config, allocator));
  SHOW("event.size", sizeof(aoi_event));
  SHOW("event.kind", offsetof(aoi_event, kind));
  SHOW("entity.size", sizeof(aoi_entity));
  SHOW("entity.flags", offsetof(aoi_entity, flags));
  SHOW("move_op.size", sizeof(aoi_move_op));
  SHOW("stats.size", sizeof(aoi_stats));
  SHOW("stats.phase_ns", offsetof(aoi_stats, phase_ns));
  SHOW("stats.shard_entities", offsetof(aoi_stats, shard_entities));
  return 0;
}
