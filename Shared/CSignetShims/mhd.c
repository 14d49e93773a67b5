#include "CSignetShims.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>

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
        MHD_OPTION_NOTIFY_COMPLETED, (MHD_RequestCompletedCallback)completed_handler, completed_cls,
        MHD_OPTION_END);
    return d;
}

uint16_t signet_mhd_bound_port(void *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info((struct MHD_Daemon *)daemon,
                                                           MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
