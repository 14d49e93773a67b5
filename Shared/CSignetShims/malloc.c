// glibc's malloc tuning, whose constants are macros of <malloc.h> (not in Swift's Glibc module).
#include "CSignetShims.h"
#include <malloc.h>

int signet_malloc_arena_max(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}

int signet_malloc_trim(void) {
    return malloc_trim(0);
}
