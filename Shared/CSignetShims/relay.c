// A minimal TCP relay: librdkafka's mock cluster listens on ephemeral ports, so the
// development broker exposes a fixed bootstrap address that forwards to it.
#include "CSignetShims.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct relay_config {
    int listen_fd;
    struct sockaddr_in target;
};

struct relay_pair {
    int client_fd;
    struct sockaddr_in target;
};

static int pump(int from, int to) {
    char buf[65536];
    ssize_t n = recv(from, buf, sizeof buf, 0);
    if (n <= 0) return -1;
    ssize_t off = 0;
    while (off < n) {
        ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) continue;
            return -1;
        }
        off += w;
    }
    return 0;
}

static void *relay_connection(void *arg) {
    struct relay_pair *p = arg;
    int upstream = socket(AF_INET, SOCK_STREAM, 0);
    if (upstream >= 0 && connect(upstream, (struct sockaddr *)&p->target, sizeof p->target) == 0) {
        int one = 1;
        setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(p->client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct pollfd fds[2] = {{p->client_fd, POLLIN, 0}, {upstream, POLLIN, 0}};
        for (;;) {
            int r = poll(fds, 2, -1);
            if (r < 0) {
                if (errno == EINTR) continue;
                break;
            }
            if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (pump(p->client_fd, upstream) < 0) break;
            }
            if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                if (pump(upstream, p->client_fd) < 0) break;
            }
        }
    }
    if (upstream >= 0) close(upstream);
    close(p->client_fd);
    free(p);
    return NULL;
}

static void *relay_accept(void *arg) {
    struct relay_config *cfg = arg;
    for (;;) {
        int c = accept(cfg->listen_fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            usleep(10000);
            continue;
        }
        struct relay_pair *p = malloc(sizeof *p);
        if (!p) { close(c); continue; }
        p->client_fd = c;
        p->target = cfg->target;
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, relay_connection, p) != 0) {
            close(c);
            free(p);
        }
        pthread_attr_destroy(&attr);
    }
    return NULL;
}

int signet_tcp_relay_start(const char *listen_host, uint16_t listen_port,
                           const char *target_host, uint16_t target_port) {
    struct relay_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) return -ENOMEM;
    cfg->target.sin_family = AF_INET;
    cfg->target.sin_port = htons(target_port);
    if (inet_pton(AF_INET, target_host, &cfg->target.sin_addr) != 1) { free(cfg); return -EINVAL; }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons(listen_port);
    if (inet_pton(AF_INET, listen_host, &addr.sin_addr) != 1) { free(cfg); return -EINVAL; }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { free(cfg); return -errno; }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 128) != 0) {
        int e = errno;
        close(fd);
        free(cfg);
        return -e;
    }
    cfg->listen_fd = fd;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, relay_accept, cfg);
    pthread_attr_destroy(&attr);
    if (rc != 0) { close(fd); free(cfg); return -rc; }
    return 0;
}
