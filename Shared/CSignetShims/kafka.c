#include "CSignetShims.h"
#include <librdkafka/rdkafka.h>

int signet_kafka_produce(void *rk, const char *topic, int32_t partition,
                         const void *key, size_t key_len,
                         const void *value, size_t value_len,
                         const char *const *header_names, const void *const *header_values,
                         const size_t *header_sizes, size_t header_count, void *opaque) {
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(header_count);
    for (size_t i = 0; i < header_count; i++) {
        rd_kafka_header_add(hdrs, header_names[i], -1, header_values[i], (ssize_t)header_sizes[i]);
    }
    rd_kafka_resp_err_t err = rd_kafka_producev(
        (rd_kafka_t *)rk,
        RD_KAFKA_V_TOPIC(topic),
        RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_KEY((void *)key, key_len),
        RD_KAFKA_V_VALUE((void *)value, value_len),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADERS(hdrs),
        RD_KAFKA_V_OPAQUE(opaque),
        RD_KAFKA_V_END);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        // On failure the headers were not handed over.
        rd_kafka_headers_destroy(hdrs);
    }
    return (int)err;
}
