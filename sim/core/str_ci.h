/*
 * str_ci.h: case-insensitive matching of the free text fsdpsim reads
 * (published rows' sharding and precision columns, kernel and op names in
 * profiler traces), where the same word comes in any case.
 */
#ifndef FSDPSIM_STR_CI_H
#define FSDPSIM_STR_CI_H

#include <stdbool.h>

/* Whether NEEDLE stands in HAY, ignoring ASCII case; false when HAY is
 * NULL or empty (an empty NEEDLE is in every other HAY). */
bool str_has_ci(const char *hay, const char *needle);

#endif
