/*
 * stress.h: the stress points of AOI_STRESS builds (CMake -DAOI_STRESS=ON,
 * the `stress` group of scripts/test.sh, under ThreadSanitizer). A stress
 * point stands where one thread hands data to another: a ring's push and
 * pop (ring.c), a tick's commands (tick.c), a handoff (apply.c) and the
 * merges of the compute step (compute.c, push.c). There it may yield, spin
 * or sleep a few microseconds at random, so that tests meet the rare
 * interleavings of rings, handoffs and merges. Free otherwise: the macro
 * is empty. The point itself is in sync.c, beside the spin it reuses.
 */
#ifndef AOI_STRESS_H
#define AOI_STRESS_H

#ifdef AOI_STRESS
void aoi__stress_point(void);
#define AOI__STRESS() aoi__stress_point()
#else
#define AOI__STRESS() ((void)0)
#endif

#endif /* AOI_STRESS_H */
