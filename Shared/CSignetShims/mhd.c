// accept4
#define _GNU_SOURCE
#include "CSignetShims.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

// libmicrohttpd's own unescaping decodes the path in place, so `%00` ends the C string the
// access handler receives (`/t/a%00b` arrived as `/t/a`) and `%2F` becomes a separator. This
// one leaves every escape in place: the router decodes each segment after splitting, and
// query arguments are decoded in Swift ('+' is already a space there, done by MHD before).
static size_t signet_keep_escapes(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    return strlen(s);
}

// `bind_ipv4`:`port`, or every address when `bind_ipv4` is NULL or not an IPv4 address.
static struct sockaddr_in ipv4_address(const char *bind_ipv4, uint16_t port) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (bind_ipv4 == NULL || inet_pton(AF_INET, bind_ipv4, &addr.sin_addr) != 1) {
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
    }
    return addr;
}

// One daemon with the options both modes share. `thread_pool_size` 0 or 1 leaves
// MHD_OPTION_THREAD_POOL_SIZE out (a daemon without an internal thread refuses a pool; one with
// a pool of 1 runs its single internal thread anyway, and libmicrohttpd says so on stderr, a
// line outside the service's JSON logs at every start of the probes' listener). With
// MHD_USE_NO_LISTEN_SOCKET in `flags` the daemon has no listener (loop mode: connections are
// added with MHD_add_connection), and the address options are left out; otherwise it listens
// on `bind_ipv4`:`port` with SO_REUSEPORT.
static struct MHD_Daemon *start_daemon(unsigned int flags, uint16_t port, const char *bind_ipv4,
                                       unsigned int thread_pool_size, unsigned int connection_limit,
                                       unsigned int connection_timeout_seconds, size_t connection_memory,
                                       void *access_handler, void *access_cls,
                                       void *completed_handler, void *completed_cls,
                                       void *accept_policy, void *notify_connection, void *connection_cls) {
    struct sockaddr_in addr = ipv4_address(bind_ipv4, port);
    // Optional options go through MHD_OPTION_ARRAY, present or left out (MHD_OPTION_END ends
    // the array early, so an absent one must come after every present one).
    struct MHD_OptionItem pool[3];
    size_t n = 0;
    if (thread_pool_size > 1) pool[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)thread_pool_size, NULL};
    // The connection's memory pool: the read buffer (the request line and headers must fit in
    // it whole; a body streams through it) and the response headers. libmicrohttpd zeroes all
    // of it before every request of a kept-alive connection (MHD_pool_reset), so its size is
    // a per-request cost. 0 keeps libmicrohttpd's default (32 KiB).
    if (connection_memory > 0) pool[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory, NULL};
    pool[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    if ((flags & MHD_USE_NO_LISTEN_SOCKET) != 0) {
        return MHD_start_daemon(
            flags, 0, (MHD_AcceptPolicyCallback)accept_policy, connection_cls,
            (MHD_AccessHandlerCallback)access_handler, access_cls,
            MHD_OPTION_ARRAY, pool,
            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
            MHD_OPTION_UNESCAPE_CALLBACK, signet_keep_escapes, NULL,
            MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback)completed_handler, completed_cls,
            MHD_OPTION_NOTIFY_CONNECTION, (MHD_NotifyConnectionCallback)notify_connection, connection_cls,
            MHD_OPTION_END);
    }
    return MHD_start_daemon(
        flags, port, (MHD_AcceptPolicyCallback)accept_policy, connection_cls,
        (MHD_AccessHandlerCallback)access_handler, access_cls,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_ARRAY, pool,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        // SO_REUSEPORT (pool mode; it dates from when every loop listened on the port).
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
        MHD_OPTION_UNESCAPE_CALLBACK, signet_keep_escapes, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback)completed_handler, completed_cls,
        MHD_OPTION_NOTIFY_CONNECTION, (MHD_NotifyConnectionCallback)notify_connection, connection_cls,
        MHD_OPTION_END);
}

void *signet_mhd_start(unsigned int extra_flags, uint16_t port, const char *bind_ipv4,
                       unsigned int thread_pool_size, unsigned int connection_limit,
                       unsigned int connection_timeout_seconds, size_t connection_memory,
                       void *access_handler, void *access_cls,
                       void *completed_handler, void *completed_cls,
                       void *accept_policy, void *notify_connection, void *connection_cls) {
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                         MHD_USE_ERROR_LOG | extra_flags;
    return start_daemon(flags, port, bind_ipv4, thread_pool_size, connection_limit, connection_timeout_seconds,
                        connection_memory, access_handler, access_cls, completed_handler, completed_cls,
                        accept_policy, notify_connection, connection_cls);
}

uint16_t signet_mhd_bound_port(void *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info((struct MHD_Daemon *)daemon,
                                                           MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

// Closing a listening socket resets every connection in its accept queue: a client (a gateway)
// whose connect had succeeded, and which had sent its request, sees a reset it cannot tell
// from a failure after processing, and must not replay a POST. So the queue is emptied into
// the daemon first, and only then does the socket stop listening. What arrives between the
// last accept and the swap is the only loss left (microseconds, against the whole queue).
int signet_mhd_quiesce_draining_backlog(void *daemon, unsigned int *taken) {
    struct MHD_Daemon *d = (struct MHD_Daemon *)daemon;
    *taken = 0;
    MHD_socket ls = MHD_quiesce_daemon(d);
    if (ls == MHD_INVALID_SOCKET) return -1;
    int fl = fcntl(ls, F_GETFL, 0);
    if (fl >= 0) (void)fcntl(ls, F_SETFL, fl | O_NONBLOCK);
    enum { limit = 4096 };
    struct pending { int fd; socklen_t len; struct sockaddr_storage addr; };
    struct pending *queued = calloc(limit, sizeof *queued);
    unsigned int n = 0;
    while (queued != NULL && n < limit) {
        queued[n].len = sizeof queued[n].addr;
        int fd = accept4(ls, (struct sockaddr *)&queued[n].addr, &queued[n].len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            break;
        }
        queued[n].fd = fd;
        n += 1;
    }
    int placeholder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (placeholder >= 0) {
        (void)dup2(placeholder, ls);
        close(placeholder);
    } else {
        (void)shutdown(ls, SHUT_RDWR);
    }
    for (unsigned int i = 0; i < n; i++) {
        if (MHD_add_connection(d, queued[i].fd, (const struct sockaddr *)&queued[i].addr, queued[i].len) == MHD_YES) {
            *taken += 1;
        }
    }
    free(queued);
    return ls;
}

size_t signet_sockaddr_bytes(const void *address, uint8_t out[16]) {
    const struct sockaddr *sa = (const struct sockaddr *)address;
    if (sa == NULL) return 0;
    if (sa->sa_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return 16;
    }
    return 0;
}

size_t signet_mhd_connection_address(void *connection, uint8_t out[16]) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info((struct MHD_Connection *)connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? signet_sockaddr_bytes(info->client_addr, out) : 0;
}

int signet_mhd_connection_fd(void *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info((struct MHD_Connection *)connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

void *signet_mhd_connection_context(void *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info((struct MHD_Connection *)connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

// MARK: - External epoll mode, one daemon per event loop, one listener per server

void *signet_mhd_start_external(unsigned int connection_limit, unsigned int connection_timeout_seconds,
                                size_t connection_memory, void *access_handler, void *access_cls,
                                void *completed_handler, void *completed_cls,
                                void *accept_policy, void *notify_connection, void *connection_cls) {
    // No MHD_USE_INTERNAL_POLLING_THREAD: the caller's loop runs the daemon. Suspend/resume
    // makes libmicrohttpd keep an eventfd in its epoll set, which MHD_resume_connection from
    // any thread writes: the loop, waiting on the daemon's epoll descriptor, wakes up. No
    // listening socket: the server's acceptor hands connections over (signet_mhd_add_connection).
    unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET;
    return start_daemon(flags, 0, NULL, 0, connection_limit, connection_timeout_seconds, connection_memory,
                        access_handler, access_cls, completed_handler, completed_cls,
                        accept_policy, notify_connection, connection_cls);
}

int signet_mhd_add_connection(void *daemon, int fd, const void *address, uint32_t address_length) {
    return MHD_add_connection((struct MHD_Daemon *)daemon, fd, (const struct sockaddr *)address,
                              (socklen_t)address_length) == MHD_YES ? 1 : 0;
}

int signet_listen_tcp4(const char *bind_ipv4, uint16_t port, int backlog, uint16_t *bound_port) {
    struct sockaddr_in addr = ipv4_address(bind_ipv4, port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int on = 1;
    // SO_REUSEADDR, as libmicrohttpd sets: a restart binds while old connections are in TIME_WAIT.
    // No SO_REUSEPORT: a second server on the same port is an error, not a silent share.
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    struct sockaddr_in bound;
    socklen_t len = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &len) == 0) *bound_port = ntohs(bound.sin_port);
    return fd;
}

int signet_accept(int listen_fd, void *address, uint32_t *address_length) {
    for (;;) {
        socklen_t len = (socklen_t)*address_length;
        int fd = accept4(listen_fd, (struct sockaddr *)address, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            *address_length = (uint32_t)len;
            return fd;
        }
        // A connection reset while queued, or a signal: try the next one.
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return -1;
    }
}

int signet_mhd_epoll_fd(void *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info((struct MHD_Daemon *)daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

int64_t signet_mhd_timeout_ms(void *daemon) {
    MHD_UNSIGNED_LONG_LONG ms = 0;
    if (MHD_get_timeout((struct MHD_Daemon *)daemon, &ms) != MHD_YES) return -1;
    return ms > INT32_MAX ? INT32_MAX : (int64_t)ms;
}

int signet_mhd_run(void *daemon) { return MHD_run((struct MHD_Daemon *)daemon) == MHD_YES ? 1 : 0; }
