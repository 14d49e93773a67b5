// Heap accounting for the fuzz targets' allocation bound, in C so that the hooks never allocate
// or touch Swift's runtime (they run inside malloc and free). The targets are single-threaded;
// the counters are plain.
#include "CFuzzSupport.h"

#include <stdint.h>

// AddressSanitizer's allocator interface (compiler-rt's sanitizer/allocator_interface.h).
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
int __sanitizer_get_ownership(const volatile void *p);
size_t __sanitizer_get_allocated_size(const volatile void *p);

static size_t live;
static size_t peak;
static int installed;

static void on_malloc(const volatile void *p, size_t size) {
    (void)p;
    live += size;
    if (live > peak) peak = live;
}

static void on_free(const volatile void *p) {
    if (p == NULL || !__sanitizer_get_ownership(p)) return;
    size_t size = __sanitizer_get_allocated_size(p);
    // Memory allocated before the measurement began is freed from a count that never held it.
    live = live > size ? live - size : 0;
}

void signet_fuzz_allocation_begin(void) {
    if (!installed) {
        __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
        installed = 1;
    }
    live = 0;
    peak = 0;
}

size_t signet_fuzz_allocation_peak(void) { return peak; }
