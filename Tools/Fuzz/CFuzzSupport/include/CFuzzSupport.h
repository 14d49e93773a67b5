#ifndef SIGNET_CFUZZSUPPORT_H
#define SIGNET_CFUZZSUPPORT_H
#include <stddef.h>

/// Starts measuring heap use (AddressSanitizer's malloc and free hooks): from now on the bytes
/// allocated and not yet freed are counted from zero, and their peak is kept.
void signet_fuzz_allocation_begin(void);

/// The peak of the bytes allocated and not freed since the last begin.
size_t signet_fuzz_allocation_peak(void);

#endif
