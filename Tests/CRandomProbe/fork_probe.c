// Test only (CryptoTests): whether a forked child serves its parent's buffered random bytes.
// Kept out of the production shims: it forks.
#include "CRandomProbe.h"
#include "CCryptoShims.h"
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct report {
    long remaining;
    uint8_t bytes[32];
};

int signet_random_fork_probe(uint8_t *parent_next, uint8_t *child_first, size_t *child_remaining, size_t *parent_remaining) {
    uint8_t first[32];
    // Fill this thread's page (and take from it) so that it holds bytes when the process forks.
    if (!signet_random_bytes(first, sizeof first)) return 0;
    long held = signet_random_thread_remaining();
    if (held < 0) return 0;
    *parent_remaining = (size_t)held;
    int fds[2];
    if (pipe(fds) != 0) return 0;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        // The child: what its copy of the page holds, then the first bytes it serves.
        struct report r;
        r.remaining = signet_random_thread_remaining();
        if (!signet_random_bytes(r.bytes, sizeof r.bytes)) _exit(1);
        ssize_t n = write(fds[1], &r, sizeof r);
        _exit(n == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fds[1]);
    // The parent: the bytes its page serves next, which a child with a copy of the page would
    // have served too.
    int ok = signet_random_bytes(parent_next, 32);
    struct report r;
    size_t got = 0;
    while (ok && got < sizeof r) {
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (poll(&p, 1, 20000) <= 0) { ok = 0; break; }
        ssize_t n = read(fds[0], (uint8_t *)&r + got, sizeof r - got);
        if (n <= 0) { ok = 0; break; }
        got += (size_t)n;
    }
    close(fds[0]);
    if (!ok) kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 0;
    // A child whose page was wiped holds 0 bytes (or, had it no page, -1: reported as is).
    *child_remaining = r.remaining < 0 ? (size_t)-1 : (size_t)r.remaining;
    memcpy(child_first, r.bytes, 32);
    return 1;
}
