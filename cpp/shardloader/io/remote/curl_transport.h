// CurlTransport: HTTP(S) requests through one libcurl multi handle.
//
// Every remote backend (plain HTTP, S3) sends its requests here. One
// background thread drives a curl multi handle (libcurl's "multi interface",
// https://curl.se/libcurl/c/libcurl-multi.html), so all requests of the
// process share one connection cache: connections are kept alive and reused,
// and HTTP/2 is negotiated over TLS where the server offers it, with
// concurrent requests to one host multiplexed on one connection.
// Callers block in Perform() while the event loop runs their transfer; many
// threads may Perform() at once, and their transfers run concurrently.
//
// libcurl is initialised once (absl::call_once) and never cleaned up at exit,
// as DESIGN.md asks. The transport does not retry: see retry.h.
//
// Ownership: Shared() is process-wide and never destroyed. Thread-safety:
// Perform() is thread-safe.
#ifndef SHARDLOADER_IO_REMOTE_CURL_TRANSPORT_H_
#define SHARDLOADER_IO_REMOTE_CURL_TRANSPORT_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shardloader {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; never logged
  std::string body;                  // request body (PUT, POST)
  // Where a successful (2xx) response body goes. With `sink` set, the body is
  // written there and may not exceed `sink_capacity` bytes; otherwise it is
  // kept in HttpResponse::body. Bodies of other responses (error documents)
  // always go to HttpResponse::body, capped at 64 KiB.
  char* sink = nullptr;
  size_t sink_capacity = 0;
  bool follow_redirects = false;  // only for unsigned requests
  absl::Duration connect_timeout = absl::Seconds(10);
  // The transfer fails when it moves fewer than `low_speed_bytes_per_s`
  // bytes per second for `low_speed_time` (a stalled server).
  int64_t low_speed_bytes_per_s = 1024;
  absl::Duration low_speed_time = absl::Seconds(30);
  // PEM file of the CA certificates TLS peers are verified against; empty:
  // libcurl's default store. Verification is never turned off.
  std::string ca_bundle;
};

struct HttpResponse {
  long status_code = 0;  // 0 when no response arrived
  // Header names in lower case; the last value wins.
  absl::flat_hash_map<std::string, std::string> headers;
  std::string body;
  size_t sink_bytes = 0;  // bytes of a 2xx body written to the sink
};

class CurlTransport {
 public:
  // The process-wide transport (started on first use).
  static CurlTransport& Shared();

  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  // Sends `request` and waits for the whole response, filling `response`
  // (also when failing: `sink_bytes` then says how much of the body
  // arrived, so a caller can resume). Any HTTP status is a success here; the
  // returned error is about the transfer: Unavailable (cannot connect,
  // connection reset or closed mid-body, DNS), DeadlineExceeded (connect or
  // low-speed timeout), DataLoss (a body longer than the sink),
  // PermissionDenied (the server's TLS certificate is not trusted),
  // InvalidArgument (malformed URL, `ca_bundle` unreadable). Messages
  // name the URL without its query string, never a header.
  absl::Status Perform(const HttpRequest& request, HttpResponse* response);

 private:
  CurlTransport();
  struct Impl;
  Impl* impl_;  // never freed: the transport lives until exit
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_CURL_TRANSPORT_H_
