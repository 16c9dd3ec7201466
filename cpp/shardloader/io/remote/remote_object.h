// RemoteObject: one object behind HTTP(S), read by byte ranges.
//
// Open() stats the object once (HEAD) and pins its size and ETag. Every
// later ReadRange() is a ranged GET ("Range: bytes=a-b") that sends
// "If-Match: <etag>" and also compares the ETag of each response, so an
// object replaced while it is being read fails with DataLoss instead of
// mixing old and new bytes. A transfer that breaks mid-body is resumed at the
// byte where it stopped; transient failures are retried (retry.h).
//
// The backend-specific part is a RemoteTarget: the object's URL and how to
// authorize a request to it (nothing for plain HTTP, SigV4 for S3). Requests
// go through the HttpTransport given to Open() (http_transport.h): the shared
// curl transport unless a test passes another.
//
// Ownership: shared. Thread-safety: ReadRange() may be called from many
// threads at once.
#ifndef SHARDLOADER_IO_REMOTE_REMOTE_OBJECT_H_
#define SHARDLOADER_IO_REMOTE_REMOTE_OBJECT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shardloader/io/remote/http_transport.h"
#include "shardloader/io/remote/retry.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

struct RemoteTarget {
  std::string url;  // the object's HTTP(S) URL
  // Adds authorization to a request just before each attempt (e.g. a SigV4
  // signature); empty for none. Errors are returned as they are.
  std::function<absl::Status(HttpRequest*)> authorize;
  bool follow_redirects = false;  // only for unsigned requests
};

// The retry policy and the request timeouts that `options` ask for.
RetryPolicy RetryPolicyOf(const SourceOptions& options);
HttpRequest BaseRequestOf(const SourceOptions& options, std::string method, std::string url);

class RemoteObject {
 public:
  // Stats `target` (HEAD, retried) through `transport`, which the object
  // keeps for its reads. `uri` is the name errors carry. Errors: NotFound
  // (404), PermissionDenied (401/403), Unavailable (retries exhausted),
  // InvalidArgument (no Content-Length), each naming `uri`.
  static absl::StatusOr<std::shared_ptr<RemoteObject>> Open(
      std::string uri, RemoteTarget target, const SourceOptions& options,
      std::shared_ptr<HttpTransport> transport = DefaultHttpTransport());

  const std::string& uri() const { return uri_; }
  int64_t size() const { return size_; }
  const std::string& etag() const { return etag_; }  // "" if the server sends none

  // Reads exactly `size` bytes at `offset` into `dst`. Errors: DataLoss (the
  // range passes the end, the object changed: another ETag or size, 412),
  // Unavailable (retries exhausted), PermissionDenied, NotFound (deleted),
  // each with the URI and offset.
  absl::Status ReadRange(int64_t offset, size_t size, char* dst) const;

 private:
  RemoteObject(std::string uri, RemoteTarget target, const SourceOptions& options,
               std::shared_ptr<HttpTransport> transport, int64_t size, std::string etag);
  // DataLoss if a 2xx response names another version of the object.
  absl::Status CheckSameObject(const HttpResponse& response) const;

  std::string uri_;
  RemoteTarget target_;
  SourceOptions options_;
  std::shared_ptr<HttpTransport> transport_;
  int64_t size_;
  std::string etag_;
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_REMOTE_OBJECT_H_
