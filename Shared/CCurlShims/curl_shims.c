#include "CCurlShims.h"
#include <curl/curl.h>

// Each wrapper passes the value with exactly the C type that libcurl's va_arg reads for the
// option's type class, which is the whole point of going through C.

int signet_curl_setopt_long(void *curl, int option, long value) {
    return (int)curl_easy_setopt((CURL *)curl, (CURLoption)option, value);
}

int signet_curl_setopt_str(void *curl, int option, const char *value) {
    return (int)curl_easy_setopt((CURL *)curl, (CURLoption)option, value);
}

int signet_curl_setopt_ptr(void *curl, int option, void *value) {
    return (int)curl_easy_setopt((CURL *)curl, (CURLoption)option, value);
}

int signet_curl_setopt_slist(void *curl, int option, void *list) {
    return (int)curl_easy_setopt((CURL *)curl, (CURLoption)option, (struct curl_slist *)list);
}

// libcurl reads function options with va_arg as a function pointer; converting the void
// pointer back to one is conditionally supported by ISO C and exact on every POSIX target.
typedef void (*signet_curl_any_function)(void);

int signet_curl_setopt_callback(void *curl, int option, void *function) {
    return (int)curl_easy_setopt((CURL *)curl, (CURLoption)option,
                                 (signet_curl_any_function)function);
}

int signet_curl_getinfo_long(void *curl, int info, long *value) {
    return (int)curl_easy_getinfo((CURL *)curl, (CURLINFO)info, value);
}
