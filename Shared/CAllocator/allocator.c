// jemalloc for the service executables (README "The request path": allocator).
//
// Linking this object puts libjemalloc before libc among the executable's needed libraries, so
// that malloc, free and the rest resolve to jemalloc for the whole process: the Swift runtime,
// libmicrohttpd, libpq, librdkafka and OpenSSL allocate through it too.
#include <jemalloc/jemalloc.h>
#include <stddef.h>

// jemalloc reads this at its first allocation; the MALLOC_CONF environment variable, read after
// it, overrides any of it (an operator's knob). Two arenas (the default is four per core), and
// smaller per-thread caches (at most 32 objects of a small size class, 4 of a large one, sizes up
// to 4 KiB; the defaults are 200, 20 and 32 KiB): a service process has about twenty threads
// (librdkafka's among them) of which two, the HTTP loops, allocate much, and the default caches
// held about 1 MB of idle memory per process. The authentication service's CPU per sign-in was
// the same within the bench's noise either way (README "The request path": allocator).
const char *malloc_conf = "narenas:2,tcache_nslots_small_max:32,tcache_nslots_large:4,tcache_max:4096";

// A reference to jemalloc that no linker can drop (a constructor is always kept), so that the
// library stays needed even with --as-needed and --gc-sections.
__attribute__((constructor)) static void signet_allocator_touch(void) {
    unsigned narenas = 0;
    size_t size = sizeof(narenas);
    (void)mallctl("opt.narenas", &narenas, &size, NULL, 0);
}
