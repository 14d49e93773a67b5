#ifndef SIGNET_CSIGNETSHIMS_H
#define SIGNET_CSIGNETSHIMS_H
// Shims for C calls Swift cannot make directly (variadic functions, macros).
// Only void pointers and plain C types cross this header, so no library type is
// declared by two Clang modules.
#include <stddef.h>
#include <stdint.h>

/// Starts a libmicrohttpd daemon: epoll, internal thread pool, suspend/resume, path escapes
/// left in place (see mhd.c). `bind_ipv4` may be NULL (all interfaces). `accept_policy`
/// (an MHD_AcceptPolicyCallback) and `notify_connection` (an MHD_NotifyConnectionCallback)
/// share `connection_cls`; either may be NULL. `connection_memory` is each connection's memory
/// pool in bytes (MHD_OPTION_CONNECTION_MEMORY_LIMIT; 0: libmicrohttpd's default, 32 KiB).
/// Returns the `struct MHD_Daemon *` or NULL.
void *signet_mhd_start(unsigned int extra_flags, uint16_t port, const char *bind_ipv4,
                       unsigned int thread_pool_size, unsigned int connection_limit,
                       unsigned int connection_timeout_seconds, size_t connection_memory,
                       void *access_handler, void *access_cls,
                       void *completed_handler, void *completed_cls,
                       void *accept_policy, void *notify_connection, void *connection_cls);

/// The address of a `struct sockaddr` (IPv4: 4 bytes, IPv6: 16) copied into `out`; its length,
/// or 0 for another family.
size_t signet_sockaddr_bytes(const void *address, uint8_t out[16]);

/// A connection's client address, as signet_sockaddr_bytes.
size_t signet_mhd_connection_address(void *connection, uint8_t out[16]);

/// A connection's socket (MHD_CONNECTION_INFO_CONNECTION_FD), or -1.
int signet_mhd_connection_fd(void *connection);

/// The socket context set by the connection-notification callback, or NULL.
void *signet_mhd_connection_context(void *connection);

/// The port a daemon listens on (useful when started on port 0).
uint16_t signet_mhd_bound_port(void *daemon);

/// Stops a daemon accepting without resetting what the kernel already queued: quiesces it,
/// accepts every connection waiting in the listen backlog and hands each to the daemon
/// (`MHD_add_connection`, through the accept policy), then stops the socket listening by
/// putting an unbound socket in place of its descriptor (so the number stays valid for the
/// daemon's threads, as libmicrohttpd asks). Returns that descriptor, to close after
/// `MHD_stop_daemon`, or -1 when the daemon was not listening; `*taken` is how many queued
/// connections were handed over.
int signet_mhd_quiesce_draining_backlog(void *daemon, unsigned int *taken);

/// rd_kafka_producev with a copied key and value, optional headers and a per-message opaque.
/// `headers` holds `header_count` headers end to end, each its name's and its value's length
/// (uint32, host order) then the name's and the value's bytes; a buffer that does not hold
/// exactly that is RD_KAFKA_RESP_ERR__INVALID_ARG, nothing sent. Returns an rd_kafka_resp_err_t
/// (0 on success).
int signet_kafka_produce(void *rk, const char *topic, int32_t partition,
                         const void *key, size_t key_len,
                         const void *value, size_t value_len,
                         const void *headers, size_t headers_len, size_t header_count, void *opaque);

/// Starts a TCP relay on listen_host:listen_port that forwards each connection to
/// target_host:target_port, on detached threads. Returns 0 or a negative errno.
int signet_tcp_relay_start(const char *listen_host, uint16_t listen_port,
                           const char *target_host, uint16_t target_port);


// MARK: - Event loops (loop.c)

#define SIGNET_EPOLLIN 0x001u
#define SIGNET_EPOLLOUT 0x004u
#define SIGNET_EPOLLERR 0x008u
#define SIGNET_EPOLLHUP 0x010u
#define SIGNET_EPOLLRDHUP 0x2000u
#define SIGNET_EPOLLONESHOT (1u << 30)

/// epoll_create1(EPOLL_CLOEXEC).
int signet_epoll_create(void);
/// EPOLL_CTL_ADD of `fd` with `events`, its data the 64-bit `token`. 0, or -1 (errno).
int signet_epoll_add(int epfd, int fd, uint32_t events, uint64_t token);
/// EPOLL_CTL_MOD, or EPOLL_CTL_ADD when `fd` is not in the set yet (a new socket, or one
/// whose earlier registration ended when it was closed). 0, or -1 (errno).
int signet_epoll_arm(int epfd, int fd, uint32_t events, uint64_t token);
/// EPOLL_CTL_DEL. 0, or -1 (errno).
int signet_epoll_del(int epfd, int fd);
/// epoll_wait into parallel arrays (at most 64 events). The count, 0 on EINTR, -1 on error.
int signet_epoll_wait(int epfd, uint64_t *tokens, uint32_t *events, int max, int timeout_ms);
/// A non-blocking, close-on-exec eventfd, or -1.
int signet_eventfd(void);
/// Adds 1 to an eventfd (wakes its reader).
void signet_eventfd_signal(int fd);
/// Resets an eventfd to 0 (non-blocking read).
void signet_eventfd_drain(int fd);

// MARK: - libmicrohttpd in external epoll mode (mhd.c)

/// Like signet_mhd_start, without internal threads and without a listening socket
/// (`MHD_USE_EPOLL`, suspend/resume, `MHD_USE_NO_LISTEN_SOCKET`), driven by the caller's loop
/// through signet_mhd_epoll_fd, MHD_run and signet_mhd_timeout_ms, on one thread; connections
/// come from signet_mhd_add_connection. Returns the `struct MHD_Daemon *` or NULL.
void *signet_mhd_start_external(unsigned int connection_limit, unsigned int connection_timeout_seconds,
                                size_t connection_memory, void *access_handler, void *access_cls,
                                void *completed_handler, void *completed_cls,
                                void *accept_policy, void *notify_connection, void *connection_cls);
/// MHD_add_connection: the daemon takes `fd` (and closes it, whatever the result), checking
/// its connection limit and the accept policy with `address`. 1 (MHD_YES) or 0. libmicrohttpd
/// 0.9.75 adds the connection directly when the daemon has no internal thread, so it must be
/// called on the thread that runs the daemon (MHD_run), never concurrently with it.
int signet_mhd_add_connection(void *daemon, int fd, const void *address, uint32_t address_length);
/// A non-blocking, close-on-exec IPv4 listening socket on `bind_ipv4` (NULL or unparsable: all
/// interfaces) and `port` (0: any), SO_REUSEADDR. Returns it and sets `*bound_port`, or -1 (errno).
int signet_listen_tcp4(const char *bind_ipv4, uint16_t port, int backlog, uint16_t *bound_port);
/// accept4 (non-blocking, close-on-exec) of the next queued connection; its peer address is
/// written to `address` (`*address_length` in: the capacity, out: the length). Skips
/// connections aborted while queued. The descriptor, or -1 (errno; EAGAIN: none queued).
int signet_accept(int listen_fd, void *address, uint32_t *address_length);
/// The daemon's epoll descriptor (MHD_DAEMON_INFO_EPOLL_FD), or -1.
int signet_mhd_epoll_fd(void *daemon);
/// Milliseconds until the daemon must run again (MHD_get_timeout), -1 for no limit.
int64_t signet_mhd_timeout_ms(void *daemon);
/// MHD_run: processes what is ready without blocking. 1 (MHD_YES) or 0.
int signet_mhd_run(void *daemon);

// MARK: - Signals (signals.c)

/// Catches SIGTERM and SIGINT from now on: a handler writes each signal's number (one byte) to
/// a pipe. Returns the pipe's read end (non-blocking, close-on-exec), the same on every call
/// (installed once); -1 (errno) when no pipe could be made, the signals then left as they were.
int signet_signal_trap(void);

#endif
