#include "shardloader/io/remote/http_errors.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace shardloader {
namespace {

// The text of <Code>...</Code> in an S3 error document, or "".
absl::string_view S3ErrorCode(absl::string_view body) {
  const size_t begin = body.find("<Code>");
  if (begin == absl::string_view::npos) return "";
  const size_t end = body.find("</Code>", begin);
  if (end == absl::string_view::npos) return "";
  return body.substr(begin + 6, end - begin - 6);
}

}  // namespace

absl::Status HttpStatusToStatus(const HttpRequest& request, const HttpResponse& response) {
  const long code = response.status_code;
  if (code >= 200 && code < 300) return absl::OkStatus();
  const absl::string_view s3_code = S3ErrorCode(response.body);
  const std::string message = absl::StrCat(
      request.method, " ", absl::string_view(request.url).substr(0, request.url.find('?')),
      ": HTTP ", code, s3_code.empty() ? "" : absl::StrCat(" ", s3_code));
  switch (code) {
    case 404:
      return absl::NotFoundError(message);
    case 401:
    case 403:
      return absl::PermissionDeniedError(
          absl::StrCat(message, " (access denied or bad credentials)"));
    case 412:
      return absl::DataLossError(absl::StrCat(message, " (the object changed while it was read)"));
    case 416:
      return absl::OutOfRangeError(message);
    case 429:
      return absl::ResourceExhaustedError(message);
    case 408:
      return absl::UnavailableError(message);
    default:
      break;
  }
  if (code == 503 && s3_code == "SlowDown") return absl::ResourceExhaustedError(message);
  if (code >= 500) return absl::UnavailableError(message);
  return absl::InvalidArgumentError(message);
}

}  // namespace shardloader
