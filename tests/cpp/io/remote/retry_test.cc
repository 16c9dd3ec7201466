#include "shardloader/io/remote/retry.h"

#include <gtest/gtest.h>

#include "shardloader/io/remote/http_errors.h"

namespace shardloader {
namespace {

TEST(RetryTest, RetriesTransientFailuresThenGivesUpAsUnavailable) {
  int calls = 0;
  const RetryPolicy policy{.max_attempts = 4, .initial_backoff = absl::Microseconds(1)};
  const absl::Status status = RunWithRetries(policy, [&] {
    ++calls;
    return absl::ResourceExhaustedError("HTTP 429");
  });
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("gave up after 4 attempts: HTTP 429"), std::string::npos);
}

TEST(RetryTest, StopsAtTheFirstSuccessOrPermanentError) {
  int calls = 0;
  const RetryPolicy policy{.initial_backoff = absl::Microseconds(1)};
  EXPECT_TRUE(RunWithRetries(policy, [&] {
                return ++calls < 3 ? absl::UnavailableError("reset") : absl::OkStatus();
              }).ok());
  EXPECT_EQ(calls, 3);
  calls = 0;
  EXPECT_EQ(RunWithRetries(policy,
                           [&] {
                             ++calls;
                             return absl::NotFoundError("404");
                           })
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(calls, 1);
}

TEST(RetryTest, BackoffStaysUnderItsCeiling) {
  const RetryPolicy policy{.initial_backoff = absl::Milliseconds(100),
                           .max_backoff = absl::Seconds(1)};
  for (int attempt = 0; attempt < 40; ++attempt) {
    const absl::Duration pause = Backoff(policy, attempt);
    EXPECT_GE(pause, absl::ZeroDuration());
    EXPECT_LE(pause,
              std::min(absl::Seconds(1), absl::Milliseconds(100) * (1 << std::min(attempt, 20))));
  }
}

TEST(HttpErrorsTest, MapsStatusCodesToTheProjectTable) {
  HttpRequest request;
  request.url = "https://bucket.s3.amazonaws.com/key?X-Amz-Signature=secret";
  HttpResponse response;
  const auto code = [&](long http, std::string body = "") {
    response.status_code = http;
    response.body = std::move(body);
    return HttpStatusToStatus(request, response).code();
  };
  EXPECT_EQ(code(206), absl::StatusCode::kOk);
  EXPECT_EQ(code(404), absl::StatusCode::kNotFound);
  EXPECT_EQ(code(403, "<Error><Code>SignatureDoesNotMatch</Code></Error>"),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(code(412), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code(429), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(code(503, "<Error><Code>SlowDown</Code></Error>"),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(code(500), absl::StatusCode::kUnavailable);
  EXPECT_EQ(code(400), absl::StatusCode::kInvalidArgument);
  response.status_code = 403;
  response.body = "<Error><Code>InvalidAccessKeyId</Code></Error>";
  const absl::Status status = HttpStatusToStatus(request, response);
  EXPECT_NE(status.message().find("InvalidAccessKeyId"), std::string::npos);
  EXPECT_EQ(status.message().find("secret"), std::string::npos);  // no query string
}

}  // namespace
}  // namespace shardloader
