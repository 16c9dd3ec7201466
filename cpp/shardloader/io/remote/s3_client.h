// S3Client: requests to Amazon S3 or an S3-compatible store (MinIO, Ceph
// RGW, moto), signed with SigV4 (sigv4.h) or sent unsigned for public
// buckets.
//
// Addressing: with a custom endpoint (SourceOptions::endpoint_url, else
// AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL) requests are path-style,
// "<endpoint>/<bucket>/<key>", which every S3-compatible store accepts; on
// AWS they are virtual-hosted, "https://<bucket>.s3.<region>.amazonaws.com/
// <key>" (path-style for bucket names with dots, which TLS cannot cover).
// Credentials and region: aws_credentials.h, resolved once in Create().
// Requests go through the HttpTransport given to Create() (the shared curl
// transport unless a test passes another); objects opened from
// ObjectTarget() should be opened with transport() too.
//
// Secrets: the credentials stay inside the client; messages name the
// bucket and key only. Ownership: shared. Thread-safety: all methods are
// thread-safe (the client is immutable after Create()).
#ifndef SHARDLOADER_IO_REMOTE_S3_CLIENT_H_
#define SHARDLOADER_IO_REMOTE_S3_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shardloader/io/remote/aws_credentials.h"
#include "shardloader/io/remote/http_transport.h"
#include "shardloader/io/remote/remote_object.h"
#include "shardloader/io/remote/sigv4.h"
#include "shardloader/io/source_options.h"

namespace shardloader {

struct S3Location {
  std::string bucket;
  std::string key;  // may be empty or a prefix
};

// Splits "s3://bucket/key". Errors: InvalidArgument for another scheme or
// an empty bucket.
absl::StatusOr<S3Location> ParseS3Uri(const std::string& uri);

class S3Client : public std::enable_shared_from_this<S3Client> {
 public:
  // Resolves endpoint, region and (unless `options.anonymous`) credentials;
  // the client sends its requests through `transport`.
  // Errors: PermissionDenied (no credentials), NotFound (a named profile
  // that does not exist), InvalidArgument (a malformed endpoint).
  static absl::StatusOr<std::shared_ptr<const S3Client>> Create(
      const SourceOptions& options,
      std::shared_ptr<HttpTransport> transport = DefaultHttpTransport());

  // The object as a RemoteTarget whose requests this client signs.
  RemoteTarget ObjectTarget(const S3Location& location) const;

  // Sends `method` to the object or bucket at `location` with `query` and
  // `body`, signed, retried per the options. Returns the 2xx response.
  // Errors: as HttpStatusToStatus() and RunWithRetries(), naming the URI.
  absl::StatusOr<HttpResponse> Call(const std::string& method, const S3Location& location,
                                    const QueryParams& query, std::string body = "") const;

  // Keys under `prefix` in `bucket`, in S3's (lexicographic) order, with
  // ListObjectsV2, following continuation tokens. Errors: as Call().
  absl::StatusOr<std::vector<std::string>> ListKeys(const std::string& bucket,
                                                    const std::string& prefix) const;

  const SourceOptions& options() const { return options_; }
  const std::shared_ptr<HttpTransport>& transport() const { return transport_; }

 private:
  S3Client(SourceOptions options, std::shared_ptr<HttpTransport> transport, std::string endpoint,
           bool path_style, std::string region, AwsCredentials credentials, bool anonymous);

  // URL path (encoded) and full URL of `location` with `query`.
  std::string CanonicalUri(const S3Location& location) const;
  std::string Url(const S3Location& location, const std::string& query) const;
  // Adds host, x-amz-* and Authorization headers (nothing when anonymous).
  absl::Status Sign(HttpRequest* request, const std::string& canonical_uri,
                    const std::string& canonical_query) const;

  SourceOptions options_;
  std::shared_ptr<HttpTransport> transport_;
  std::string endpoint_;  // "scheme://host[:port]", no trailing slash
  bool path_style_;
  std::string region_;
  AwsCredentials credentials_;
  bool anonymous_;
};

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_S3_CLIENT_H_
