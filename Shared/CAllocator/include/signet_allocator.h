#ifndef SIGNET_ALLOCATOR_H
#define SIGNET_ALLOCATOR_H

/* The service executables' memory allocator: jemalloc, linked into each of them (not into the
   shared libraries, the tests or the fuzzers). This header declares nothing: the target's
   object carries jemalloc's configuration (`malloc_conf`) and the reference that keeps
   libjemalloc among the executable's needed libraries, ahead of libc's malloc. Which allocator
   serves a process is read at run time by Platform's `MemoryAllocator`. */

#endif
