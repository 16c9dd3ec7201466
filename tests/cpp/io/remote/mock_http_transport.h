// MockHttpTransport: a scripted, in-memory HttpTransport for unit tests.
//
// It serves objects put into it the way an object store does (HEAD: size and
// ETag; GET: the whole object, or 206 with Content-Range for a "Range:
// bytes=a-b" header; 412 when an If-Match header names another ETag; 416 for
// a range that starts past the end; 404 with an S3 error document for an
// unknown URL), and records every request it is sent. Before serving, it
// consumes the next scripted MockReply for the URL, if any, which can fail
// the transfer, answer with any status, headers and body (e.g. an S3
// listing page, a 503), cut the body short after N bytes (the connection
// drops: Unavailable, with the bytes so far in the sink, so callers resume),
// or replace the object's ETag after answering (the object changed mid-read).
//
// Test-only: not part of the library. Ownership: share it as a
// std::shared_ptr<HttpTransport>. Thread-safety: all methods are
// thread-safe (one mutex; requests are served one at a time).
#ifndef SHARDLOADER_TESTS_CPP_IO_REMOTE_MOCK_HTTP_TRANSPORT_H_
#define SHARDLOADER_TESTS_CPP_IO_REMOTE_MOCK_HTTP_TRANSPORT_H_

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "shardloader/io/remote/http_transport.h"

namespace shardloader::testing {

// The value of header `name` (any case) in `request`, or nullopt.
inline std::optional<std::string> HeaderValue(const HttpRequest& request, absl::string_view name) {
  for (const std::string& header : request.headers) {
    const size_t colon = header.find(':');
    if (colon != std::string::npos &&
        absl::EqualsIgnoreCase(absl::string_view(header).substr(0, colon), name)) {
      return std::string(absl::StripAsciiWhitespace(absl::string_view(header).substr(colon + 1)));
    }
  }
  return std::nullopt;
}

// One scripted answer, consumed by the next request to its URL.
struct MockReply {
  // Non-OK: the transfer fails with this error and no response.
  absl::Status transport_error;
  // Non-zero: answer with this status, `headers` (lower-case names) and
  // `body` instead of serving the stored object.
  long status = 0;
  absl::flat_hash_map<std::string, std::string> headers;
  std::string body;
  // Set: serve the object, but the connection drops after this many bytes
  // of the body (the transfer fails with Unavailable).
  std::optional<size_t> cut_after;
  // Set: after this reply, the stored object's ETag becomes this (another
  // version of it was uploaded).
  std::optional<std::string> then_etag;
};

class MockHttpTransport final : public HttpTransport {
 public:
  // Stores `bytes` at `url` (replacing what was there), with `etag`.
  void PutObject(const std::string& url, std::string bytes, std::string etag = "\"etag-1\"") {
    absl::MutexLock lock(&mu_);
    objects_[url] = {std::move(bytes), std::move(etag)};
  }

  // Appends `reply` to the script of `url`, `times` times.
  void Script(const std::string& url, const MockReply& reply, int times = 1) {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < times; ++i) scripts_[url].push_back(reply);
  }

  // The next `times` requests to `url` get HTTP `status` with `body`.
  void FailNext(const std::string& url, int times, long status, std::string body = "") {
    Script(url, {.status = status, .body = std::move(body)}, times);
  }

  // The next request to `url` gets only `bytes` bytes of its body.
  void CutNext(const std::string& url, size_t bytes) { Script(url, {.cut_after = bytes}); }

  // Every request sent so far, in order (sinks cleared).
  std::vector<HttpRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }

  // The requests with `method` sent so far, in order.
  std::vector<HttpRequest> RequestsWith(absl::string_view method) const {
    std::vector<HttpRequest> matching;
    for (HttpRequest& request : requests()) {
      if (request.method == method) matching.push_back(std::move(request));
    }
    return matching;
  }

  absl::Status Perform(const HttpRequest& request, HttpResponse* response) override {
    absl::MutexLock lock(&mu_);
    HttpRequest recorded = request;
    recorded.sink = nullptr;
    recorded.sink_capacity = 0;
    requests_.push_back(std::move(recorded));
    *response = HttpResponse();

    MockReply reply;
    if (auto script = scripts_.find(request.url);
        script != scripts_.end() && !script->second.empty()) {
      reply = std::move(script->second.front());
      script->second.pop_front();
    }
    const absl::Status status = Answer(request, reply, response);
    if (reply.then_etag) {
      if (auto object = objects_.find(request.url); object != objects_.end()) {
        object->second.etag = *reply.then_etag;
      }
    }
    return status;
  }

 private:
  struct Object {
    std::string bytes;
    std::string etag;
  };

  // Answers `request` with `reply`, or from the stored object.
  absl::Status Answer(const HttpRequest& request, const MockReply& reply,
                      HttpResponse* response) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!reply.transport_error.ok()) return reply.transport_error;
    if (reply.status != 0) {
      response->status_code = reply.status;
      response->headers = reply.headers;
      return Deliver(request, reply.body, std::nullopt, response);
    }
    const auto object = objects_.find(request.url);
    if (object == objects_.end()) {
      response->status_code = 404;
      response->body = "<Error><Code>NoSuchKey</Code></Error>";
      return absl::OkStatus();
    }
    return Serve(request, object->second, reply.cut_after, response);
  }

  // Answers `request` from `object`, as an object store does.
  static absl::Status Serve(const HttpRequest& request, const Object& object,
                            std::optional<size_t> cut_after, HttpResponse* response) {
    const int64_t size = static_cast<int64_t>(object.bytes.size());
    response->headers["etag"] = object.etag;
    const std::optional<std::string> if_match = HeaderValue(request, "If-Match");
    if (if_match && *if_match != object.etag) {
      response->status_code = 412;
      response->body = "<Error><Code>PreconditionFailed</Code></Error>";
      return absl::OkStatus();
    }
    response->headers["content-length"] = absl::StrCat(size);
    if (request.method == "HEAD") {
      response->status_code = 200;
      return absl::OkStatus();
    }
    int64_t first = 0;
    int64_t last = size - 1;
    response->status_code = 200;
    if (const std::optional<std::string> range = HeaderValue(request, "Range")) {
      absl::string_view spec = *range;
      const bool parsed = absl::ConsumePrefix(&spec, "bytes=") &&
                          spec.find('-') != absl::string_view::npos &&
                          absl::SimpleAtoi(spec.substr(0, spec.find('-')), &first) &&
                          absl::SimpleAtoi(spec.substr(spec.find('-') + 1), &last);
      if (!parsed) {
        response->status_code = 400;
        return absl::OkStatus();
      }
      if (first >= size) {
        response->status_code = 416;
        response->headers["content-range"] = absl::StrCat("bytes */", size);
        return absl::OkStatus();
      }
      last = std::min(last, size - 1);
      response->status_code = 206;
      response->headers["content-range"] = absl::StrCat("bytes ", first, "-", last, "/", size);
    }
    response->headers["content-length"] = absl::StrCat(last - first + 1);
    return Deliver(request,
                   absl::string_view(object.bytes)
                       .substr(static_cast<size_t>(first), static_cast<size_t>(last - first + 1)),
                   cut_after, response);
  }

  // Hands `body` over as CurlTransport does: a 2xx body into the request's
  // sink when it has one (DataLoss past its capacity), else into
  // response->body. With `cut_after`, only that many bytes arrive and the
  // transfer fails with Unavailable.
  static absl::Status Deliver(const HttpRequest& request, absl::string_view body,
                              std::optional<size_t> cut_after, HttpResponse* response) {
    const size_t n = std::min(body.size(), cut_after.value_or(body.size()));
    const bool success = response->status_code >= 200 && response->status_code < 300;
    if (success && request.sink != nullptr) {
      if (body.size() > request.sink_capacity) {
        return absl::DataLossError(absl::StrCat(
            request.method, " ", request.url, ": the server sent more bytes than were asked for"));
      }
      std::memcpy(request.sink, body.data(), n);
      response->sink_bytes = n;
    } else {
      response->body = std::string(body.substr(0, n));
    }
    if (n < body.size()) {
      return absl::UnavailableError(absl::StrCat(request.method, " ", request.url,
                                                 ": connection closed after ", n, " bytes"));
    }
    return absl::OkStatus();
  }

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Object> objects_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::deque<MockReply>> scripts_ ABSL_GUARDED_BY(mu_);
  std::vector<HttpRequest> requests_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardloader::testing

#endif  // SHARDLOADER_TESTS_CPP_IO_REMOTE_MOCK_HTTP_TRANSPORT_H_
