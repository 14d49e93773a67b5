#ifndef SIGNET_CZLIB_H
#define SIGNET_CZLIB_H
#include <zlib.h>
#endif
