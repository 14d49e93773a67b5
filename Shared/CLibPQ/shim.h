#ifndef SIGNET_CLIBPQ_H
#define SIGNET_CLIBPQ_H
#include <libpq-fe.h>
#endif
