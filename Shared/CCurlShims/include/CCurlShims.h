#ifndef SIGNET_CCURLSHIMS_H
#define SIGNET_CCURLSHIMS_H
// Typed wrappers for libcurl's variadic calls (curl_easy_setopt, curl_easy_getinfo), which
// Swift cannot call. Only void pointers and plain C types cross this header, so no libcurl
// type is declared by two Clang modules: `curl` is a `CURL *`, `option` a `CURLoption`,
// `info` a `CURLINFO`, and every return value a `CURLcode` (0 is CURLE_OK).

/// curl_easy_setopt for an option that takes a `long` (CURLOPTTYPE_LONG, _VALUES).
int signet_curl_setopt_long(void *curl, int option, long value);

/// curl_easy_setopt for an option that takes a NUL-terminated string. libcurl copies it
/// (every string option except CURLOPT_POSTFIELDS).
int signet_curl_setopt_str(void *curl, int option, const char *value);

/// curl_easy_setopt for an option that takes a data pointer (CURLOPT_READDATA, _WRITEDATA,
/// _XFERINFODATA, _ERRORBUFFER…). The pointee must outlive the transfer.
int signet_curl_setopt_ptr(void *curl, int option, void *value);

/// curl_easy_setopt for an option that takes a `struct curl_slist *` (CURLOPT_MAIL_RCPT,
/// CURLOPT_HTTPHEADER). The list must outlive the transfer.
int signet_curl_setopt_slist(void *curl, int option, void *list);

/// curl_easy_setopt for an option that takes a function pointer (CURLOPT_READFUNCTION,
/// _WRITEFUNCTION, _XFERINFOFUNCTION). `function` must be a C function of the type the
/// option expects; it travels as a void pointer only to keep libcurl's typedefs out of
/// this header.
int signet_curl_setopt_callback(void *curl, int option, void *function);

/// curl_easy_getinfo for an item that yields a `long` (CURLINFO_RESPONSE_CODE…).
int signet_curl_getinfo_long(void *curl, int info, long *value);

#endif
