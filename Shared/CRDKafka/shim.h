#ifndef SIGNET_CRDKAFKA_H
#define SIGNET_CRDKAFKA_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#endif
