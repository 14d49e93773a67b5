#ifndef SIGNET_C_RANDOM_PROBE_H
#define SIGNET_C_RANDOM_PROBE_H

#include <stddef.h>
#include <stdint.h>

/// Test only: fills this thread's random page (CCryptoShims' signet_random_bytes) and forks;
/// the child reports how many bytes its copy of the page holds and the first 32 bytes it
/// serves, the parent the next 32 bytes its page serves. Returns 1 when the probe ran (the
/// child exited normally within 20 s), else 0.
int signet_random_fork_probe(uint8_t *parent_next, uint8_t *child_first, size_t *child_remaining, size_t *parent_remaining);

#endif
