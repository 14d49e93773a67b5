#ifndef SIGNET_CQRENCODE_H
#define SIGNET_CQRENCODE_H
#include <qrencode.h>
#endif
