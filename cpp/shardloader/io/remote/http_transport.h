// HttpTransport: the seam between the remote backends and the network.
//
// RemoteObject, S3Client and whatever opens them (remote_source.h,
// shard_cache.h) send every HTTP request through an HttpTransport: one
// request in, one whole response (or a transfer error) out. Production code
// uses DefaultHttpTransport(), the process-wide CurlTransport
// (curl_transport.h); tests pass a scripted transport instead
// (tests/cpp/io/remote/mock_http_transport.h), so retries, resume, ETag
// pinning, error mapping and S3 signing run without a server.
//
// A transport does not retry and does not interpret HTTP statuses: any
// status is a successful transfer here. Retries are retry.h's, the status
// mapping http_errors.h's.
//
// Ownership: transports are shared (std::shared_ptr); whoever sends requests
// through one holds it (functions taking one require it non-null).
// Thread-safety: Perform() must be thread-safe.
#ifndef SHARDLOADER_IO_REMOTE_HTTP_TRANSPORT_H_
#define SHARDLOADER_IO_REMOTE_HTTP_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shardloader {

struct HttpRequest {
  std::string method = "GET";  // GET, HEAD, PUT, POST, DELETE
  std::string url;
  // "Name: value"; never logged. A byte range is a "Range: bytes=a-b" header.
  std::vector<std::string> headers;
  std::string body;  // request body (PUT, POST)
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
  // the transport's default store. Verification is never turned off.
  std::string ca_bundle;
};

struct HttpResponse {
  long status_code = 0;  // 0 when no response arrived
  // Header names in lower case; the last value wins.
  absl::flat_hash_map<std::string, std::string> headers;
  std::string body;
  size_t sink_bytes = 0;  // bytes of a 2xx body written to the sink
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;

  // Sends `request` and waits for the whole response, filling `response`
  // (also when failing: `sink_bytes` then says how much of the body
  // arrived, so a caller can resume). Any HTTP status is a success here; the
  // returned error is about the transfer: Unavailable (cannot connect,
  // connection reset or closed mid-body, DNS), DeadlineExceeded (connect or
  // low-speed timeout), DataLoss (a body longer than the sink),
  // PermissionDenied (the server's TLS certificate is not trusted),
  // InvalidArgument (malformed URL, `ca_bundle` unreadable). Messages
  // name the URL without its query string, never a header.
  virtual absl::Status Perform(const HttpRequest& request, HttpResponse* response) = 0;
};

// The process-wide transport: CurlTransport::Shared() (started on first
// use, never destroyed). Defined in curl_transport.cc.
std::shared_ptr<HttpTransport> DefaultHttpTransport();

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_HTTP_TRANSPORT_H_
