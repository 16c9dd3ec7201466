// Maps an HTTP response that is not a success to an absl::Status, following
// the project's error table (DESIGN.md): 404 NotFound; 401 and 403
// PermissionDenied (S3 also answers bad credentials this way: its error
// code, e.g. "InvalidAccessKeyId" or "SignatureDoesNotMatch", is quoted);
// 412 (If-Match failed: the object changed) DataLoss; 416 OutOfRange; 429
// and 503 SlowDown ResourceExhausted; 5xx and 408 Unavailable; other 4xx
// InvalidArgument.
//
// The message names the method and URL (without its query string) and the
// status line, never a request header. Thread-safety: pure.
#ifndef SHARDLOADER_IO_REMOTE_HTTP_ERRORS_H_
#define SHARDLOADER_IO_REMOTE_HTTP_ERRORS_H_

#include "absl/status/status.h"
#include "shardloader/io/remote/http_transport.h"

namespace shardloader {

// OK for 2xx; otherwise the mapped error.
absl::Status HttpStatusToStatus(const HttpRequest& request, const HttpResponse& response);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_HTTP_ERRORS_H_
