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
                       void *completed_handler, void *completed_cls) {
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
        flags, port, NULL, NULL, (MHD_AccessHandlerCallback)access_handler, access_cls,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, thread_pool_size,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
        MHD_OPTION_UNESCAPE_CALLBACK, signet_keep_escapes, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback)completed_handler, completed_cls,
        MHD_OPTION_END);
    return d;
}

uint16_t signet_mhd_bound_port(void *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info((struct MHD_Daemon *)daemon,
                                                           MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
