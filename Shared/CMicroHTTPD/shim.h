#ifndef SIGNET_CMICROHTTPD_H
#define SIGNET_CMICROHTTPD_H
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
#endif
