#include "CSignetShims.h"
#include <librdkafka/rdkafka.h>
#include <string.h>

int signet_kafka_produce(void *rk, const char *topic, int32_t partition,
                         const void *key, size_t key_len,
                         const void *value, size_t value_len,
                         const void *headers, size_t headers_len, size_t header_count, void *opaque) {
    // Each header in `headers`: its name's length and its value's (uint32, host order), then
    // the name's bytes and the value's. librdkafka copies them.
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(header_count);
    const unsigned char *p = headers, *end = p + headers_len;
    for (size_t i = 0; i < header_count; i++) {
        uint32_t name_len, value_len;
        if ((size_t)(end - p) < 2 * sizeof(uint32_t)) goto invalid;
        memcpy(&name_len, p, sizeof name_len);
        memcpy(&value_len, p + sizeof name_len, sizeof value_len);
        p += 2 * sizeof(uint32_t);
        if ((size_t)(end - p) < (size_t)name_len + value_len) goto invalid;
        rd_kafka_header_add(hdrs, (const char *)p, (ssize_t)name_len, p + name_len, (ssize_t)value_len);
        p += (size_t)name_len + value_len;
    }
    if (p != end) goto invalid;
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
invalid:
    rd_kafka_headers_destroy(hdrs);
    return (int)RD_KAFKA_RESP_ERR__INVALID_ARG;
}
