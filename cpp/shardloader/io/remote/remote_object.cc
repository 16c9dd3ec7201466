#include "shardloader/io/remote/remote_object.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "shardloader/io/read_range.h"
#include "shardloader/io/remote/http_errors.h"
#include "shardloader/status.h"

namespace shardloader {
namespace {

// The total size in "Content-Range: bytes a-b/total", or -1.
int64_t ContentRangeTotal(const HttpResponse& response) {
  const auto it = response.headers.find("content-range");
  if (it == response.headers.end()) return -1;
  const size_t slash = it->second.rfind('/');
  int64_t total = -1;
  if (slash == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(it->second).substr(slash + 1), &total)) {
    return -1;
  }
  return total;
}

// Authorizes `request` for `target` and sends one attempt of it.
absl::Status SendTo(const RemoteTarget& target, HttpTransport& transport, HttpRequest* request,
                    HttpResponse* response) {
  request->follow_redirects = target.follow_redirects;
  if (target.authorize) SHARDLOADER_RETURN_IF_ERROR(target.authorize(request));
  return transport.Perform(*request, response);
}

std::string HeaderOr(const HttpResponse& response, const std::string& name) {
  const auto it = response.headers.find(name);
  return it == response.headers.end() ? std::string() : it->second;
}

}  // namespace

RetryPolicy RetryPolicyOf(const SourceOptions& options) {
  return {.max_attempts = options.max_attempts,
          .initial_backoff = options.initial_backoff,
          .max_backoff = options.max_backoff};
}

HttpRequest BaseRequestOf(const SourceOptions& options, std::string method, std::string url) {
  HttpRequest request;
  request.method = std::move(method);
  request.url = std::move(url);
  request.connect_timeout = options.connect_timeout;
  request.low_speed_bytes_per_s = options.low_speed_bytes_per_s;
  request.low_speed_time = options.low_speed_time;
  request.ca_bundle = options.ca_bundle;
  return request;
}

RemoteObject::RemoteObject(std::string uri, RemoteTarget target, const SourceOptions& options,
                           std::shared_ptr<HttpTransport> transport, int64_t size, std::string etag)
    : uri_(std::move(uri)),
      target_(std::move(target)),
      options_(options),
      transport_(std::move(transport)),
      size_(size),
      etag_(std::move(etag)) {}

absl::StatusOr<std::shared_ptr<RemoteObject>> RemoteObject::Open(
    std::string uri, RemoteTarget target, const SourceOptions& options,
    std::shared_ptr<HttpTransport> transport) {
  HttpResponse response;
  const absl::Status status = RunWithRetries(RetryPolicyOf(options), [&] {
    HttpRequest request = BaseRequestOf(options, "HEAD", target.url);
    SHARDLOADER_RETURN_IF_ERROR(SendTo(target, *transport, &request, &response));
    return HttpStatusToStatus(request, response);
  });
  if (!status.ok()) return WithContext(status, {.uri = uri});
  int64_t size = -1;
  if (!absl::SimpleAtoi(HeaderOr(response, "content-length"), &size) || size < 0) {
    return WithContext(absl::InvalidArgumentError("the server did not say how long the object is "
                                                  "(no Content-Length in its answer to HEAD)"),
                       {.uri = uri});
  }
  return std::shared_ptr<RemoteObject>(new RemoteObject(std::move(uri), std::move(target), options,
                                                        std::move(transport), size,
                                                        HeaderOr(response, "etag")));
}

absl::Status RemoteObject::CheckSameObject(const HttpResponse& response) const {
  const std::string etag = HeaderOr(response, "etag");
  if (!etag_.empty() && !etag.empty() && etag != etag_) {
    return absl::DataLossError(absl::StrCat("the object changed while it was read (its ETag was ",
                                            etag_, ", now ", etag, ")"));
  }
  const int64_t total = ContentRangeTotal(response);
  if (total >= 0 && total != size_) {
    return absl::DataLossError(absl::StrCat("the object changed while it was read (it was ", size_,
                                            " bytes, now ", total, ")"));
  }
  return absl::OkStatus();
}

absl::Status RemoteObject::ReadRange(int64_t offset, size_t size, char* dst) const {
  SHARDLOADER_RETURN_IF_ERROR(CheckReadRange(uri_, offset, size, size_));
  const int64_t end = offset + static_cast<int64_t>(size);
  size_t done = 0;  // bytes in place; a retry resumes after them
  const absl::Status status = RunWithRetries(RetryPolicyOf(options_), [&] {
    if (done == size) return absl::OkStatus();
    HttpRequest request = BaseRequestOf(options_, "GET", target_.url);
    request.headers.push_back(
        absl::StrCat("Range: bytes=", offset + static_cast<int64_t>(done), "-", end - 1));
    // Weak ETags never match under If-Match (RFC 9110 13.1.1): compare only.
    if (!etag_.empty() && !absl::StartsWith(etag_, "W/")) {
      request.headers.push_back(absl::StrCat("If-Match: ", etag_));
    }
    request.sink = dst + done;
    request.sink_capacity = size - done;
    HttpResponse response;
    const absl::Status transfer = SendTo(target_, *transport_, &request, &response);
    if (response.status_code >= 200 && response.status_code < 300) {
      SHARDLOADER_RETURN_IF_ERROR(CheckSameObject(response));
      if (response.status_code != 206 &&
          !(offset + static_cast<int64_t>(done) == 0 && end == size_)) {
        return absl::UnimplementedError(
            "the server ignores Range requests (answered 200 to a ranged GET)");
      }
      done += response.sink_bytes;
    }
    SHARDLOADER_RETURN_IF_ERROR(transfer);
    SHARDLOADER_RETURN_IF_ERROR(HttpStatusToStatus(request, response));
    if (done < size) {
      return absl::UnavailableError(
          absl::StrCat("the connection closed after ", done, " of ", size, " bytes"));
    }
    return absl::OkStatus();
  });
  return WithContext(status, {.uri = uri_, .offset = offset});
}

}  // namespace shardloader
