// SIGTERM and SIGINT caught by a handler of our own, installed synchronously: each signal's
// number is written (one byte, async-signal-safe) to a pipe that Platform's SignalTrap reads.
// Nothing is lost between installing and reading: an unread byte waits in the pipe. (A
// dispatch signal source is registered later, on libdispatch's manager thread, after the
// caller has set SIG_IGN: a signal in between was ignored and gone.)
#define _GNU_SOURCE
#include "CSignetShims.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int trap_fds[2] = {-1, -1};
static int trap_errno = 0;
static pthread_once_t trap_once = PTHREAD_ONCE_INIT;

static void trap_handler(int signo) {
    int saved = errno;
    unsigned char byte = (unsigned char)signo;
    // A full pipe (64 KiB of signals nobody read) drops the byte: one is enough to act on.
    ssize_t ignored = write(trap_fds[1], &byte, 1);
    (void)ignored;
    errno = saved;
}

static void trap_install(void) {
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        trap_errno = errno;
        return;
    }
    trap_fds[0] = fds[0];
    trap_fds[1] = fds[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = trap_handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
}

int signet_signal_trap(void) {
    pthread_once(&trap_once, trap_install);
    if (trap_fds[0] < 0) errno = trap_errno;
    return trap_fds[0];
}
