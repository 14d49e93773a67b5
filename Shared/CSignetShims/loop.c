// epoll and eventfd for the HTTP event loops (Platform's EventLoop). `struct epoll_event` is
// packed on x86-64, which Swift does not import, so the calls are wrapped here with plain
// integers: the event's data is a 64-bit token, its mask a 32-bit set of EPOLL* bits.
#define _GNU_SOURCE
#include "CSignetShims.h"
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

int signet_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int signet_epoll_add(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev = {.events = events, .data = {.u64 = token}};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int signet_epoll_arm(int epfd, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev = {.events = events, .data = {.u64 = token}};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) == 0) return 0;
    if (errno != ENOENT) return -1;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int signet_epoll_del(int epfd, int fd) {
    struct epoll_event ev = {0};
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &ev);
}

int signet_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms) {
    struct epoll_event evs[64];
    if (max > 64) max = 64;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    if (n < 0) return errno == EINTR ? 0 : -1;
    for (int i = 0; i < n; i++) {
        tokens[i] = evs[i].data.u64;
        events[i] = evs[i].events;
    }
    return n;
}

int signet_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void signet_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t r;
    do { r = write(fd, &one, sizeof one); } while (r < 0 && errno == EINTR);
}

void signet_eventfd_drain(int fd) {
    uint64_t value;
    ssize_t r;
    do { r = read(fd, &value, sizeof value); } while (r < 0 && errno == EINTR);
}
