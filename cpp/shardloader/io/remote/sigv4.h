// AWS Signature Version 4 for S3 requests, as specified in "Signing AWS API
// requests" and "Authenticating Requests: Using the Authorization Header"
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html,
// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html).
// SHA-256 and HMAC-SHA256 come from OpenSSL.
//
// Secrets: the secret key only enters the HMAC chain; nothing here formats
// it into a string that could reach a message or log.
// Thread-safety: pure functions.
#ifndef SHARDLOADER_IO_REMOTE_SIGV4_H_
#define SHARDLOADER_IO_REMOTE_SIGV4_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "shardloader/internal/sha256.h"  // Sha256Hex, for payload hashes

namespace shardloader {

// RFC 3986 percent-encoding as SigV4 wants it: every byte but A-Z a-z 0-9
// - . _ ~ is encoded as %XY (upper-case hex); '/' is kept when `keep_slash`
// (object keys in paths) and encoded otherwise (query values).
std::string UriEncode(absl::string_view text, bool keep_slash);

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// The canonical query string: names and values encoded, sorted by name,
// joined with '&' ("" when empty). Also the query string to send.
std::string CanonicalQuery(const QueryParams& query);

struct SigV4Input {
  std::string method;           // "GET"
  std::string canonical_uri;    // encoded path, "/bucket/key"
  std::string canonical_query;  // CanonicalQuery()
  // Headers to sign; names in any case, values as sent. Must include "host",
  // "x-amz-date" and "x-amz-content-sha256".
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_sha256;  // Sha256Hex(body)
};

struct SigV4Key {
  absl::string_view access_key_id;
  absl::string_view secret_access_key;
  absl::string_view region;   // "us-east-1"
  absl::string_view service;  // "s3"
};

// The value of x-amz-date for `now`: "YYYYMMDDTHHMMSSZ" (UTC).
std::string AmzDate(absl::Time now);

// The Authorization header's value for `input` signed at `amz_date`:
// "AWS4-HMAC-SHA256 Credential=<id>/<scope>, SignedHeaders=..., Signature=...".
std::string SigV4Authorization(const SigV4Key& key, absl::string_view amz_date,
                               const SigV4Input& input);

}  // namespace shardloader

#endif  // SHARDLOADER_IO_REMOTE_SIGV4_H_
