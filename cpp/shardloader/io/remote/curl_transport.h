// CurlTransport: HTTP(S) requests through one libcurl multi handle.
//
// The production HttpTransport (http_transport.h): every remote backend
// (plain HTTP, S3) sends its requests here unless a test passes another
// transport. One background thread drives a curl multi handle (libcurl's
// "multi interface", https://curl.se/libcurl/c/libcurl-multi.html), so all
// requests of the
// process share one connection cache: connections are kept alive and reused,
// and HTTP/2 is negotiated over TLS where the server offers it, with
// concurrent requests to one host multiplexed on one connection.
// Callers block in Perform() while the event loop runs their transfer; many
// threads may Perform() at once, and their transfers run concurrently.
//
// libcurl is initialised once and never cleaned up at exit, as DESIGN.md
// asks. The transport does not retry: see retry.h.
//
// Ownership: Shared() is process-wide and never destroyed;
// DefaultHttpTransport() hands it out as a non-owning shared_ptr. A child
// forked from the process (pthread_atfork) starts a transport of its own on
// first use: the parent's event-loop thread does not exist in the child.
// Thread-safety: Perform() is thread-safe.
#ifndef SHARDLOADER_IO_REMOTE_CURL_TRANSPORT_H_
#define SHARDLOADER_IO_REMOTE_CURL_TRANSPORT_H_

#include "absl/status/status.h"
#include "shardloader/io/remote/http_transport.h"

namespace shardloader {

class CurlTransport final : public HttpTransport {
 public:
  // The process-wide transport (started on first use in each process).
  static CurlTransport& Shared();

  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  // HttpTransport::Perform(): libcurl's errors mapped as described there.
  absl::Status Perform(const HttpRequest& request, HttpResponse* response) override;

 private:
  CurlTransport();
  struct Impl;
  Impl* impl_;  // never freed: the transport lives until exit
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_CURL_TRANSPORT_H_
