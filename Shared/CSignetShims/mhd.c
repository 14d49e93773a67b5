#include "CSignetShims.h"
#include <arpa/inet.h>
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

void *signet_mhd_start(unsigned int extra_flags, uint16_t port, const char *bind_ipv4,
                       unsigned int thread_pool_size, unsigned int connection_limit,
                       unsigned int connection_timeout_seconds,
                       void *access_handler, void *access_cls,
                       void *completed_handler, void *completed_cls,
                       void *accept_policy, void *notify_connection, void *connection_cls) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (bind_ipv4 == NULL || inet_pton(AF_INET, bind_ipv4, &addr.sin_addr) != 1) {
        addr.sin_addr.s_addr = htonl(INADDR_ANY);
    }
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
                         MHD_USE_ERROR_LOG | extra_flags;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, port, (MHD_AcceptPolicyCallback)accept_policy, connection_cls,
        (MHD_AccessHandlerCallback)access_handler, access_cls,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
        MHD_OPTION_UNESCAPE_CALLBACK, signet_keep_escapes, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback)completed_handler, completed_cls,
        MHD_OPTION_NOTIFY_CONNECTION, (MHD_NotifyConnectionCallback)notify_connection, connection_cls,
        MHD_OPTION_END);
    return d;
}

uint16_t signet_mhd_bound_port(void *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info((struct MHD_Daemon *)daemon,
                                                           MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
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
